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
	// Lines maps field paths (see pathKey) to their line in the source; nil
	// when unknown.
	Lines map[string]int
}

// Error lists one problem per line, each prefixed with its source line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s:", e.Source, ErrInvalid)
	for _, fe := range e.Errs {
		b.WriteString("\n  ")
		if line := e.line(fe.Field); line > 0 {
			fmt.Fprintf(&b, "line %d: ", line)
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// line returns the source line of path or of its nearest ancestor that
// the source has (a missing required field has no line of its own), or 0.
func (e *ValidationError) line(path string) int {
	key := pathKey(path)
	for {
		if line, ok := e.Lines[key]; ok {
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

// Decode decodes one scenario document strictly, without defaulting or
// validating: YAML syntax errors, duplicate keys, a wrong apiVersion or kind,
// unknown fields (matched case-sensitively) and values of the wrong type are
// errors, the last three reported with field paths and lines as a
// *ValidationError.
func Decode(data []byte) (*Scenario, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%w: parse YAML: %v", ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: parse YAML: %v", ErrInvalid, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the document must be a mapping with apiVersion: %s and kind: %s", ErrInvalid, APIVersion, Kind)
	}
	var errs field.ErrorList
	for _, tf := range []struct{ key, want string }{{"apiVersion", APIVersion}, {"kind", Kind}} {
		if v, _ := obj[tf.key].(string); v != tf.want {
			errs = append(errs, field.NotSupported(field.NewPath(tf.key), obj[tf.key], []string{tf.want}))
		}
	}
	if len(errs) == 0 {
		errs = checkValue(nil, doc, reflect.TypeFor[Scenario]())
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Source: "scenario", Errs: errs, Lines: fieldLines(data)}
	}
	s := &Scenario{}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
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
		return nil, &ValidationError{Source: source, Errs: errs, Lines: fieldLines(data)}
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

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkValue compares a decoded JSON value with the Go type it will be
// decoded into and reports unknown fields and type mismatches by path.
func checkValue(path *field.Path, v any, t reflect.Type) field.ErrorList {
	if v == nil {
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		raw, err := json.Marshal(v)
		if err == nil {
			err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		}
		if err != nil {
			return field.ErrorList{field.Invalid(path, v, err.Error())}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkValue(path, v, t.Elem())
	case reflect.Interface:
		return nil
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a mapping")}
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var errs field.ErrorList
		for _, k := range keys {
			fp := childPath(path, k)
			ft, ok := fields[k]
			if !ok {
				errs = append(errs, field.Forbidden(fp, "unknown field; known fields: "+strings.Join(sortedKeys(fields), ", ")))
				continue
			}
			errs = append(errs, checkValue(fp, obj[k], ft)...)
		}
		return errs
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a mapping")}
		}
		keys := sortedKeys(obj)
		var errs field.ErrorList
		for _, k := range keys {
			errs = append(errs, checkValue(path.Key(k), obj[k], t.Elem())...)
		}
		return errs
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				return field.ErrorList{field.TypeInvalid(path, v, "must be a base64 string")}
			}
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a list")}
		}
		var errs field.ErrorList
		for i, e := range list {
			errs = append(errs, checkValue(path.Index(i), e, t.Elem())...)
		}
		return errs
	case reflect.String:
		if _, ok := v.(string); !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a string (quote it in YAML)")}
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be true or false")}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be an integer")}
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return field.ErrorList{field.TypeInvalid(path, v, fmt.Sprintf("must be an integer that fits %d bits", t.Bits()))}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a non-negative integer")}
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			return field.ErrorList{field.TypeInvalid(path, v, fmt.Sprintf("must be a non-negative integer that fits %d bits", t.Bits()))}
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a number")}
		}
	default:
		return field.ErrorList{field.InternalError(path, fmt.Errorf("no type check for %s", t))}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func childPath(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

// jsonFields adds a struct's JSON names and field types to fields, including
// those of embedded structs marked inline (metav1.TypeMeta).
func jsonFields(t reflect.Type, fields map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && (strings.Contains(opts, "inline") || f.Tag.Get("json") == "") {
				jsonFields(ft, fields)
				continue
			}
		}
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fields[name] = f.Type
	}
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
