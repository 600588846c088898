// Package strictyaml is the strict loader of drakit's versioned YAML file
// formats (emulator profiles, allocator scenarios). Decode reads one file:
// exactly one YAML document (a second one, after "---", is an error naming
// its line, whatever it holds), without duplicate keys, a mapping with the
// format's apiVersion and kind, and reports with Kubernetes field paths what
// a strict decode would reject: unknown fields (case-sensitive, listing the
// known ones) and values of the wrong type, all of them at once, where
// sigs.k8s.io/yaml's UnmarshalStrict stops at the first problem and names no
// path. CheckValue is that field check on its own, for a value already
// decoded from JSON (encoding/json with UseNumber).
package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Errors about a file as a whole, before any field is looked at.
var (
	// ErrSyntax: the file is not YAML, or a mapping repeats a key.
	ErrSyntax = errors.New("parse YAML")
	// ErrMultipleDocuments: the file holds a second YAML document.
	ErrMultipleDocuments = errors.New("a second YAML document")
	// ErrNotMapping: the document is not a mapping (empty, a list, a scalar).
	ErrNotMapping = errors.New("the document must be a mapping")
)

// Decode decodes data, which must be exactly one YAML document, strictly
// into out, a pointer to the format's Go type. Problems of the file as a
// whole are an error wrapping ErrSyntax, ErrMultipleDocuments (with the line
// of the second document) or ErrNotMapping. Problems of its fields are
// returned as a field.ErrorList, out untouched: an apiVersion or kind other
// than the given ones (reported alone, since the rest is then another
// format), unknown fields and values of the wrong type (see CheckValue).
func Decode(data []byte, apiVersion, kind string, out any) (field.ErrorList, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	if err := singleDocument(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w with apiVersion: %s and kind: %s", ErrNotMapping, apiVersion, kind)
	}
	var errs field.ErrorList
	for _, tf := range []struct{ key, want string }{{"apiVersion", apiVersion}, {"kind", kind}} {
		if v, _ := obj[tf.key].(string); v != tf.want {
			errs = append(errs, field.NotSupported(field.NewPath(tf.key), obj[tf.key], []string{tf.want}))
		}
	}
	if len(errs) == 0 {
		errs = CheckValue(nil, doc, reflect.TypeOf(out).Elem())
	}
	if len(errs) > 0 {
		return errs, nil
	}
	dec = json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil, nil
}

// singleDocument returns an error wrapping ErrMultipleDocuments, with the
// second document's line, when data holds more than one YAML document,
// even an empty one (a trailing "---") or one that is not valid YAML.
func singleDocument(data []byte) error {
	first := firstContentLine(data)
	utf16 := bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})
	if !utf16 && markerAfter(data, first, "---", "...") == 0 {
		// Another document needs a "---" or "..." marker at the start of
		// a line: without one, UTF-8 data is one document (the common
		// case, decided without parsing data again).
		return nil
	}
	d := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc yamlv3.Node
	if err := d.Decode(&doc); err != nil {
		return fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	err := d.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return fmt.Errorf("line %d: %w: a file holds exactly one (remove the --- and what follows)", doc.Line, ErrMultipleDocuments)
	}
	// A later document that is not YAML: its marker is the first "---" at
	// the start of a line after the first document starts (YAML allows
	// none inside a document at column 0).
	if line := markerAfter(data, first, "---"); line > 0 {
		return fmt.Errorf("line %d: %w, not valid YAML either: a file holds exactly one (remove the --- and what follows)", line, ErrMultipleDocuments)
	}
	return fmt.Errorf("%w: after the first document: %w", ErrMultipleDocuments, err)
}

// lines calls yield with each line of data and its number, until yield
// returns false. Lines end where YAML's do: at "\n", "\r\n", "\r" and
// the Unicode line breaks NEL, LS and PS, which go-yaml also counts.
func lines(data []byte, yield func(n int, text string) bool) {
	text := string(data)
	for n := 1; text != ""; n++ {
		i := strings.IndexAny(text, "\n\r\u0085\u2028\u2029")
		if i < 0 {
			yield(n, text)
			return
		}
		if !yield(n, text[:i]) {
			return
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		if strings.HasPrefix(text[i:], "\r\n") {
			size = 2
		}
		text = text[i+size:]
	}
}

// firstContentLine returns the number of the first line that is not
// empty, a comment or a directive (%YAML, %TAG): where the first document
// starts, at its "---" if it has one. It returns 0 for data without one.
func firstContentLine(data []byte) int {
	first := 0
	lines(data, func(n int, text string) bool {
		t := strings.TrimSpace(text)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(text, "%") {
			return true
		}
		first = n
		return false
	})
	return first
}

// markerAfter returns the number of the first line after line that is
// one of the document markers ("---" starts a document, "..." ends one),
// alone or followed by a space or tab; or 0.
func markerAfter(data []byte, line int, markers ...string) int {
	found := 0
	lines(data, func(n int, text string) bool {
		for _, m := range markers {
			if rest, ok := strings.CutPrefix(text, m); ok && n > line && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				found = n
				return false
			}
		}
		return true
	})
	return found
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// CheckValue compares a decoded JSON value (encoding/json with UseNumber)
// with the Go type it will be decoded into and reports, by field path, every
// unknown field and every type mismatch. A nil path is the document root.
func CheckValue(path *field.Path, v any, t reflect.Type) field.ErrorList {
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
		return CheckValue(path, v, t.Elem())
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
			errs = append(errs, CheckValue(fp, obj[k], ft)...)
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
			errs = append(errs, CheckValue(path.Key(k), obj[k], t.Elem())...)
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
			errs = append(errs, CheckValue(path.Index(i), e, t.Elem())...)
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
