package declaration

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/internal/strictyaml"
)

// ErrInvalid classifies every error about a declaration's content: YAML
// syntax, a second document, unknown fields, wrong types and failed
// validation.
var ErrInvalid = errors.New("invalid driver declaration")

// Problem is one problem of a declaration.
type Problem struct {
	// Line is the line of the field, or of its nearest written parent, in
	// a parsed declaration; 0 when unknown.
	Line int
	// Flag is the flag that writes the field (Flags, without dashes); ""
	// when none does.
	Flag string
	// Err names the field by its path, e.g. deviceKinds[1].deviceClass.
	Err *field.Error
}

// String is the problem as ValidationError lists it:
// "line 12: deviceKinds[1].deviceClass: Duplicate value: …", with the flag
// that writes the field before the path: "--device-class: deviceKinds[0]…".
func (p Problem) String() string {
	s := p.Err.Error()
	if p.Flag != "" {
		s = "--" + p.Flag + ": " + s
	}
	if p.Line > 0 {
		s = "line " + strconv.Itoa(p.Line) + ": " + s
	}
	return s
}

// ValidationError lists every problem of a declaration.
type ValidationError struct {
	// Source names the declaration: Parse's name, or "driver declaration"
	// for one built in code.
	Source   string
	Problems []Problem
}

// Error lists one problem per line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s:", e.Source, ErrInvalid)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Load reads the declaration file at path and returns it parsed, defaulted
// and validated; errors name the file.
func Load(path string) (*Declaration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read driver declaration %s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse decodes one declaration document strictly (internal/strictyaml:
// exactly one YAML document, no duplicate keys, the right apiVersion and
// kind, no unknown fields, no values of the wrong type), defaults and
// validates it. name (a file name) goes into every error. Problems of the
// file as a whole are an error wrapping ErrInvalid and the strictyaml
// sentinel, with the line where YAML gives one; problems of fields are a
// *ValidationError naming each field by path and line.
func Parse(data []byte, name string) (*Declaration, error) {
	d, err := decode(data, name)
	if err != nil {
		return nil, err
	}
	d.Default()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// decode is Parse without defaulting and validation.
func decode(data []byte, name string) (*Declaration, error) {
	d := &Declaration{}
	errs, err := strictyaml.Decode(data, APIVersion, Kind, d)
	if err != nil {
		return nil, fmt.Errorf("parse driver declaration %s: %w: %w", name, ErrInvalid, err)
	}
	lines := lineIndex(data)
	if len(errs) > 0 {
		return nil, (&Declaration{lines: lines, source: name}).problems(errs)
	}
	d.lines, d.source = lines, name
	return d, nil
}

// problems turns field errors into a *ValidationError with the lines the
// fields are written on; no errors is nil.
func (d *Declaration) problems(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	source := d.source
	if source == "" {
		source = "driver declaration"
	}
	verr := &ValidationError{Source: source}
	for _, e := range errs {
		verr.Problems = append(verr.Problems, Problem{Line: d.lines.line(e.Field), Flag: d.flags[e.Field], Err: e})
	}
	return verr
}

// fieldLines maps field paths, written as field.Path writes them
// (deviceKinds[0].identity, capabilities[adminAccess]), to the line of the
// key or list item in the YAML text.
type fieldLines map[string]int

// lineIndex returns the lines of every field of a YAML document that
// strictyaml accepted; nil when yaml.v3 cannot read it.
func lineIndex(data []byte) fieldLines {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil
	}
	lines := fieldLines{}
	lines.add(&doc, "")
	return lines
}

// add records the fields below n, whose path is path. A mapping's keys are
// recorded both as struct fields (path.key) and as map keys (path[key]),
// since the YAML does not say which the Go type has; only the struct form
// is descended into (the format's maps hold scalars).
func (l fieldLines) add(n *yamlv3.Node, path string) {
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			l.add(c, path)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			child := key.Value
			if path != "" {
				child = path + "." + key.Value
				l.set(path+"["+key.Value+"]", key.Line)
			}
			l.set(child, key.Line)
			l.add(n.Content[i+1], child)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			item := path + "[" + strconv.Itoa(i) + "]"
			l.set(item, c.Line)
			l.add(c, item)
		}
	}
}

func (l fieldLines) set(path string, line int) {
	if _, ok := l[path]; !ok {
		l[path] = line
	}
}

// line returns the line of the field at path, or of its nearest recorded
// parent (a missing field is reported at the object that lacks it), or 0.
func (l fieldLines) line(path string) int {
	for p := path; p != ""; {
		if n, ok := l[p]; ok {
			return n
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}
