package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/internal/strictyaml"
)

// ErrInvalid classifies every error about a profile's content: YAML syntax,
// unknown fields, wrong types and failed validation.
var ErrInvalid = errors.New("invalid node profile")

// ErrNotFound is returned for a built-in profile name that does not exist.
var ErrNotFound = errors.New("node profile not found")

// ValidationError lists a profile's problems with their field paths.
type ValidationError struct {
	// Source names the profile: "file x.yaml" or "built-in profile dgx-h100".
	Source string
	Errs   field.ErrorList
}

// Error lists one problem per line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s:", e.Source, ErrInvalid)
	for _, fe := range e.Errs {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Parse decodes one profile document strictly: YAML syntax errors, duplicate
// keys, a wrong apiVersion or kind, unknown fields (matched case-sensitively)
// and values of the wrong type are errors, the last three reported with field
// paths as a *ValidationError. Parse neither defaults nor validates.
func Parse(data []byte) (*Profile, error) {
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
		return nil, fmt.Errorf("%w: the document must be a mapping with apiVersion, kind, metadata and spec", ErrInvalid)
	}
	var errs field.ErrorList
	for _, tf := range []struct{ key, want string }{{"apiVersion", APIVersion}, {"kind", Kind}} {
		if v, _ := obj[tf.key].(string); v != tf.want {
			errs = append(errs, field.NotSupported(field.NewPath(tf.key), obj[tf.key], []string{tf.want}))
		}
	}
	if len(errs) == 0 {
		errs = strictyaml.CheckValue(nil, doc, reflect.TypeFor[Profile]())
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Source: "profile", Errs: errs}
	}
	p := &Profile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return p, nil
}

// Load returns a defaulted, validated profile: the built-in profile called
// nameOrPath, or the file at nameOrPath when it contains a path separator or
// ends in .yaml or .yml (write ./name for a file in the current directory).
func Load(nameOrPath string) (*Profile, error) {
	if strings.ContainsRune(nameOrPath, os.PathSeparator) ||
		strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		return LoadFile(nameOrPath)
	}
	return Builtin(nameOrPath)
}

// LoadFile reads, parses, defaults and validates the profile file at path.
func LoadFile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read node profile %s: %w", path, err)
	}
	return load("file "+path, data)
}

func load(source string, data []byte) (*Profile, error) {
	p, err := Parse(data)
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			verr.Source = source
			return nil, verr
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	p.Default()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, &ValidationError{Source: source, Errs: errs}
	}
	return p, nil
}
