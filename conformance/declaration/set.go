package declaration

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Roles of a device kind, the selectors a path may give deviceKinds instead
// of an index: the kinds the kit's settings read (KitSettings).
const (
	// RoleWhole is the first kind neither partitioned nor shared.
	RoleWhole = "whole"
	// RolePartitions is the first kind with partitions.
	RolePartitions = "partitions"
	// RoleShared is the first kind with a sharedCapacity.
	RoleShared = "shared"
)

// roleKindNames are the names Set gives the kinds it appends for a role.
var roleKindNames = map[string]string{RoleWhole: "devices", RolePartitions: "partitions", RoleShared: "shared"}

// Set writes value into the field at path, as the YAML document spells it:
// names joined by ".", a list index or map key in brackets (driver.name,
// deviceKinds[0].identity.attribute, capabilities[adminAccess]). The
// device kinds also take a role, [whole], [partitions] or [shared]: the
// first kind of that role, appended (named devices, partitions or shared)
// when there is none. Missing sections are created; an index one past the
// end appends. The value is text: a string, a bool, a number, a JSON
// object for opaqueConfig.parameters, or a comma-separated list for a
// list; capabilities takes the list of claimed names. Set does not
// validate the result (Validate does); an error names the path and what
// it cannot write.
func (d *Declaration) Set(path, value string) error {
	steps, err := parseFieldPath(path)
	if err != nil {
		return fmt.Errorf("set %s: %w", path, err)
	}
	at, err := d.walk(steps, true)
	if err != nil {
		return fmt.Errorf("set %s: %w", path, err)
	}
	if err := setText(at.value, at.mapKey, value); err != nil {
		return fmt.Errorf("set %s: %w", at.path, err)
	}
	return nil
}

// Resolve returns the path Set would write, with roles as indices
// (deviceKinds[whole].deviceClass → deviceKinds[0].deviceClass); ok is
// false when a kind of the role, or a list element, does not exist yet.
func (d *Declaration) Resolve(path string) (resolved string, ok bool) {
	steps, err := parseFieldPath(path)
	if err != nil {
		return "", false
	}
	at, err := d.walk(steps, false)
	if err != nil || at.path == nil {
		return "", false
	}
	return at.path.String(), true
}

// fieldStep is one name of a path, with its bracketed selector.
type fieldStep struct {
	name, selector string
	selected       bool
}

func parseFieldPath(path string) ([]fieldStep, error) {
	if path == "" {
		return nil, fmt.Errorf("empty path")
	}
	var steps []fieldStep
	for _, part := range strings.Split(path, ".") {
		s := fieldStep{name: part}
		if open := strings.IndexByte(part, '['); open >= 0 {
			if !strings.HasSuffix(part, "]") || open == 0 || open == len(part)-2 {
				return nil, fmt.Errorf("%q: want name or name[selector]", part)
			}
			s = fieldStep{name: part[:open], selector: part[open+1 : len(part)-1], selected: true}
		}
		if s.name == "" || strings.ContainsAny(s.name, "[] ") {
			return nil, fmt.Errorf("%q: want name or name[selector]", part)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// fieldAt is where a path leads: the field's value, or a map and the key
// of the entry.
type fieldAt struct {
	value  reflect.Value
	mapKey *reflect.Value
	path   *field.Path
}

// walk follows steps from d, creating sections, list elements and kinds
// when create is set; without it, a missing one ends the walk with a nil
// path.
func (d *Declaration) walk(steps []fieldStep, create bool) (fieldAt, error) {
	v := reflect.ValueOf(d).Elem()
	var path *field.Path
	for i, s := range steps {
		if v.Kind() != reflect.Struct {
			return fieldAt{}, fmt.Errorf("%s is not a section: it has no field %s", path, s.name)
		}
		f, ok := jsonField(v, s.name)
		if !ok {
			return fieldAt{}, fmt.Errorf("%s has no field %q (fields: %s)", orTop(path), s.name, strings.Join(jsonFieldNames(v.Type()), ", "))
		}
		v, path = f, child(path, s.name)
		last := i == len(steps)-1
		if v.Kind() == reflect.Pointer && (!last || s.selected) {
			if v.IsNil() {
				if !create {
					return fieldAt{}, nil
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if !s.selected {
			continue
		}
		switch v.Kind() {
		case reflect.Map:
			if !last {
				return fieldAt{}, fmt.Errorf("%s[%s] is a single value: nothing follows it", path, s.selector)
			}
			key := reflect.New(v.Type().Key()).Elem()
			key.SetString(s.selector)
			if v.IsNil() {
				if !create {
					return fieldAt{}, nil
				}
				v.Set(reflect.MakeMap(v.Type()))
			}
			return fieldAt{value: v, mapKey: &key, path: path.Key(s.selector)}, nil
		case reflect.Slice:
			idx, err := d.element(v, path, s.selector, create)
			if err != nil || idx < 0 {
				return fieldAt{}, err
			}
			v, path = v.Index(idx), path.Index(idx)
		default:
			return fieldAt{}, fmt.Errorf("%s is neither a list nor a map: it takes no [%s]", path, s.selector)
		}
	}
	return fieldAt{value: v, path: path}, nil
}

// element is the index of the list element sel selects, appended when
// create is set and sel is one past the end or a role without a kind; -1
// when it does not exist and create is not set.
func (d *Declaration) element(list reflect.Value, path *field.Path, sel string, create bool) (int, error) {
	if n, err := strconv.Atoi(sel); err == nil {
		switch {
		case n >= 0 && n < list.Len():
			return n, nil
		case n == list.Len() && create:
			list.Set(reflect.Append(list, reflect.Zero(list.Type().Elem())))
			return n, nil
		case n == list.Len():
			return -1, nil
		}
		return 0, fmt.Errorf("%s has %d elements: index %d is beyond the next", path, list.Len(), n)
	}
	if list.Type() != reflect.TypeOf([]DeviceKind(nil)) {
		return 0, fmt.Errorf("%s takes an index, not %q", path, sel)
	}
	if _, known := roleKindNames[sel]; !known {
		return 0, fmt.Errorf("%s takes an index or a role (%s, %s, %s), not %q", path, RoleWhole, RolePartitions, RoleShared, sel)
	}
	if i := d.kindOfRole(sel); i >= 0 || !create {
		return i, nil
	}
	k := DeviceKind{Name: roleKindNames[sel]}
	switch sel {
	case RolePartitions:
		k.Partitions = &Partitions{}
	case RoleShared:
		if d.sharedKinds == nil {
			d.sharedKinds = map[string]bool{}
		}
		d.sharedKinds[k.Name] = true // shared before its sharedCapacity is set
	}
	d.DeviceKinds = append(d.DeviceKinds, k)
	return len(d.DeviceKinds) - 1, nil
}

// kindOfRole is the index of the first kind of the role, or -1.
func (d *Declaration) kindOfRole(role string) int {
	for i := range d.DeviceKinds {
		k := &d.DeviceKinds[i]
		shared := k.SharedCapacity != "" || d.sharedKinds[k.Name]
		switch {
		case role == RoleShared && shared,
			role == RolePartitions && k.Partitions != nil && !shared,
			role == RoleWhole && k.Partitions == nil && !shared:
			return i
		}
	}
	return -1
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// textForms read the sections that have a text form of their own.
var textForms = map[reflect.Type]func(v reflect.Value, text string) error{
	reflect.TypeOf(FaultResponse{}): func(v reflect.Value, text string) error {
		f, err := ParseFaultResponse(text)
		v.Set(reflect.ValueOf(f))
		return err
	},
}

// setText writes text into v, or into the map v at key.
func setText(v reflect.Value, key *reflect.Value, text string) error {
	if key != nil {
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := setScalar(elem, text); err != nil {
			return err
		}
		v.SetMapIndex(*key, elem)
		return nil
	}
	switch {
	case v.Type() == rawMessage:
		if !json.Valid([]byte(text)) {
			return fmt.Errorf("%q is not JSON", text)
		}
		v.SetBytes([]byte(text))
		return nil
	case v.Kind() == reflect.Slice:
		items := splitList(text)
		list := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, item := range items {
			if err := setScalar(list.Index(i), item); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		v.Set(list)
		return nil
	case v.Kind() == reflect.Map && v.Type().Elem().Kind() == reflect.Bool:
		m := reflect.MakeMap(v.Type())
		for _, item := range splitList(text) {
			key := reflect.New(v.Type().Key()).Elem()
			key.SetString(item)
			m.SetMapIndex(key, reflect.ValueOf(true).Convert(v.Type().Elem()))
		}
		v.Set(m)
		return nil
	case v.Kind() == reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if err := setScalar(elem.Elem(), text); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	}
	return setScalar(v, text)
}

// setScalar writes text into a value of a kind text can say.
func setScalar(v reflect.Value, text string) error {
	if parse, ok := textForms[v.Type()]; ok {
		return parse(v, text)
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%q is not true or false", text)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number of 0 or more", text)
		}
		v.SetUint(n)
	case reflect.Struct:
		return fmt.Errorf("is a section (fields: %s): set one of its fields", strings.Join(jsonFieldNames(v.Type()), ", "))
	default:
		return fmt.Errorf("a %s cannot be written as text: write it in the declaration file", v.Type())
	}
	return nil
}

func splitList(text string) []string {
	var items []string
	for _, item := range strings.Split(text, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// jsonField is the field of struct v whose JSON name is name.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// jsonName is the field's name in the document; "" for unexported fields
// and the document's apiVersion and kind.
func jsonName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !f.IsExported() || tag == "-" {
		return ""
	}
	return tag
}

func child(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

func orTop(p *field.Path) string {
	if p == nil {
		return "the declaration"
	}
	return p.String()
}

// ParseFaultResponse reads a fault response as FormatFaultResponse writes
// it: "<fault>=<health>[/<taint effect>]", a fault of digits alone being
// an Xid (48=Unhealthy/NoExecute). Validate checks the values.
func ParseFaultResponse(text string) (FaultResponse, error) {
	fault, answer, ok := strings.Cut(text, "=")
	if !ok || fault == "" {
		return FaultResponse{}, fmt.Errorf("%q: want <fault>=<health>[/<taint effect>], e.g. 48=Unhealthy/NoExecute (an Xid) or ecc-double=Unhealthy", text)
	}
	var f FaultResponse
	if xid, err := strconv.ParseUint(fault, 10, 64); err == nil && xid > 0 {
		f.Xid = xid
	} else {
		f.Fault = fault
	}
	f.Health, f.Taint, _ = strings.Cut(answer, "/")
	return f, nil
}
