package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/internal/strictyaml"
)

// ErrInvalid classifies every error about a scenario's content: YAML syntax,
// unknown fields, wrong types and failed validation.
var ErrInvalid = errors.New("invalid scenario")

// ValidationError lists a scenario's problems with their field paths and,
// where the YAML source is known, their line numbers.
type ValidationError struct {
	// Source names the scenario: "file x.yaml" or "scenario".
	Source string
	Errs   field.ErrorList
	// yaml is the document the errors are about, nil when unknown. Its
	// lines are looked up when the error is printed: callers that only
	// check the error (the fuzzer, most of the time) do not parse it again.
	yaml []byte
}

// Error lists one problem per line, each prefixed with its source line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s:", e.Source, ErrInvalid)
	lines := fieldLines(e.yaml)
	for _, fe := range e.Errs {
		b.WriteString("\n  ")
		if line := lineOf(lines, fe.Field); line > 0 {
			fmt.Fprintf(&b, "line %d: ", line)
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// lineOf returns the line of path (a field.Path string) or, when lines
// lacks it, of its nearest ancestor (a missing required field has no line
// of its own), or 0. lines is what fieldLines returns.
func lineOf(lines map[string]int, path string) int {
	key := pathKey(path)
	for {
		if line, ok := lines[key]; ok {
			return line
		}
		i := strings.LastIndexByte(key, 0)
		if i < 0 {
			return 0
		}
		key = key[:i]
	}
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Decode decodes one scenario document strictly (strictyaml.Decode),
// without defaulting or validating: YAML syntax errors, duplicate keys, a
// second YAML document, a wrong apiVersion or kind, unknown fields (matched
// case-sensitively) and values of the wrong type are errors, the last three
// reported with field paths and lines as a *ValidationError.
func Decode(data []byte) (*Scenario, error) {
	s := &Scenario{}
	errs, err := strictyaml.Decode(data, APIVersion, Kind, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Source: "scenario", Errs: errs, yaml: bytes.Clone(data)}
	}
	return s, nil
}

// Parse decodes, defaults and validates one scenario document. Problems with
// the content are a *ValidationError (errors.Is ErrInvalid) naming each
// field path and, where known, its line.
func Parse(data []byte) (*Scenario, error) {
	return parse("scenario", data)
}

// Load reads and parses the scenario file at path.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", path, err)
	}
	return parse("file "+path, data)
}

func parse(source string, data []byte) (*Scenario, error) {
	s, err := Decode(data)
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			verr.Source = source
			return nil, verr
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	s.Default()
	if errs := s.Validate(); len(errs) > 0 {
		return nil, &ValidationError{Source: source, Errs: errs, yaml: bytes.Clone(data)}
	}
	return s, nil
}

// Marshal writes s as YAML with sorted keys, so the same scenario always
// gives the same bytes, and without the noise of zero-valued API structs
// (a node's empty spec and status, a claim's empty status). Parse reads the
// output back into an equal scenario.
func Marshal(s *Scenario) ([]byte, error) {
	js, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal scenario %q: %w", s.Name, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("marshal scenario %q: %w", s.Name, err)
	}
	if node, ok := doc["node"].(map[string]any); ok && s.Node != nil {
		if reflect.DeepEqual(s.Node.Status, v1.NodeStatus{}) {
			delete(node, "status")
		}
		if reflect.DeepEqual(s.Node.Spec, v1.NodeSpec{}) {
			delete(node, "spec")
		}
	}
	for _, key := range []string{"claims", "allocatedClaims"} {
		list, _ := doc[key].([]any)
		for _, c := range list {
			if obj, ok := c.(map[string]any); ok {
				if st, ok := obj["status"].(map[string]any); ok && len(st) == 0 {
					delete(obj, "status")
				}
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal scenario %q: %w", s.Name, err)
	}
	return out, nil
}

// fieldLines maps field paths to the line they start on in data, keyed by
// pathKey of their segments. It returns nil when data is not YAML.
func fieldLines(data []byte) map[string]int {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	lines := map[string]int{}
	var walk func(segs []string, n *yamlv3.Node)
	walk = func(segs []string, n *yamlv3.Node) {
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				child := append(slices.Clip(segs), k.Value)
				lines[strings.Join(child, "\x00")] = k.Line
				walk(child, v)
			}
		case yamlv3.SequenceNode:
			for i, e := range n.Content {
				child := append(slices.Clip(segs), strconv.Itoa(i))
				lines[strings.Join(child, "\x00")] = e.Line
				walk(child, e)
			}
		}
	}
	walk(nil, root.Content[0])
	return lines
}

// pathKey turns a field.Path string ("a.b[0][x.y/z].c") into the key
// fieldLines uses: its segments joined by NUL.
func pathKey(path string) string {
	var segs []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for _, r := range path {
		switch {
		case r == '[' && depth == 0:
			flush()
			depth++
		case r == ']' && depth == 1:
			segs = append(segs, cur.String())
			cur.Reset()
			depth--
		case r == '.' && depth == 0:
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return strings.Join(segs, "\x00")
}
