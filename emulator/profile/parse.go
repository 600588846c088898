package profile

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

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
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
		errs = checkValue(nil, doc, reflect.TypeFor[Profile]())
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
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.TypeInvalid(path, v, "must be a mapping")}
		}
		fields, names := jsonFields(t)
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
				errs = append(errs, field.Forbidden(fp, "unknown field; known fields: "+strings.Join(names, ", ")))
				continue
			}
			errs = append(errs, checkValue(fp, obj[k], ft)...)
		}
		return errs
	case reflect.Slice:
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
	default:
		return field.ErrorList{field.InternalError(path, fmt.Errorf("no type check for %s", t))}
	}
	return nil
}

func childPath(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

// jsonFields maps a struct's JSON names to field types.
func jsonFields(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := make(map[string]reflect.Type, t.NumField())
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fields[name] = f.Type
		names = append(names, name)
	}
	return fields, names
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
