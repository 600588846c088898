// Package strictyaml reports, with Kubernetes field paths, what a strict
// decode of a YAML document into a Go type would reject: unknown fields
// (case-sensitive, listing the known ones) and values of the wrong type.
// sigs.k8s.io/yaml's UnmarshalStrict stops at the first problem and names no
// path; drakit's file formats (emulator profiles, allocator scenarios) report
// all of them at once. Callers decode the document with sigs.k8s.io/yaml into
// JSON, then with encoding/json (UseNumber) into `any`, and pass that here.
package strictyaml

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
