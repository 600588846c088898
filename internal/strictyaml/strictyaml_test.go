package strictyaml

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

type doc struct {
	metav1.TypeMeta `json:",inline"`
	Name            string            `json:"name"`
	Count           int32             `json:"count,omitempty"`
	Size            uint8             `json:"size,omitempty"`
	On              bool              `json:"enabled,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Items           []item            `json:"items,omitempty"`
}

type item struct {
	Value *float64 `json:"value,omitempty"`
}

func decode(t *testing.T, text string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckValue(t *testing.T) {
	cases := map[string]struct {
		text string
		want []string
	}{
		"valid, inline TypeMeta":    {"apiVersion: v1\nkind: Doc\nname: a\ncount: 3\nlabels: {x: z}\nitems: [{value: 1.5}]\n", nil},
		"unknown field, wrong case": {"Name: a\n", []string{"Name: Forbidden: unknown field; known fields: apiVersion, count, enabled, items, kind, labels, name, size"}},
		"nested unknown field":      {"items: [{valu: 1}]\n", []string{"items[0].valu: Forbidden: unknown field; known fields: value"}},
		"string expected":           {"name: 5\n", []string{`name: Invalid value: 5: must be a string (quote it in YAML)`}},
		"integer too large":         {"count: 3000000000\n", []string{`count: Invalid value: 3000000000: must be an integer that fits 32 bits`}},
		"negative unsigned":         {"size: -1\n", []string{`size: Invalid value: -1: must be a non-negative integer that fits 8 bits`}},
		"bool expected":             {"enabled: yes please\n", []string{`enabled: Invalid value: "yes please": must be true or false`}},
		"map value type":            {"labels: {x: [1]}\n", []string{`labels[x]: Invalid value: [1]: must be a string (quote it in YAML)`}},
		"every problem reported":    {"name: 1\ncolor: red\n", []string{"color: Forbidden: unknown field; known fields: apiVersion, count, enabled, items, kind, labels, name, size", `name: Invalid value: 1: must be a string (quote it in YAML)`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := CheckValue(nil, decode(t, tc.text), reflect.TypeFor[doc]())
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}
