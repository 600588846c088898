package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

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

func TestDecode(t *testing.T) {
	const head = "apiVersion: test.drakit.dev/v1\nkind: Doc\n"
	cases := map[string]struct {
		text      string
		wantName  string
		wantField []string // field errors
		wantErr   string   // document error
		sentinel  error
	}{
		"valid":                        {text: head + "name: a\n", wantName: "a"},
		"leading document marker":      {text: "---\n" + head + "name: a\n", wantName: "a"},
		"document end marker":          {text: head + "name: a\n...\n", wantName: "a"},
		"second valid document":        {text: head + "name: a\n---\n" + head + "name: b\n", wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"second document is garbage":   {text: head + "name: a\n\n---\nfoo\n", wantErr: "line 5: a second YAML document", sentinel: ErrMultipleDocuments},
		"second document not YAML":     {text: head + "name: a\n---\n: : [\n", wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"garbage after an end marker":  {text: head + "name: a\n...\n: : [\n", wantErr: "a second YAML document: after the first document: yaml: line", sentinel: ErrMultipleDocuments},
		"trailing empty document":      {text: head + "name: a\n---\n", wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"comment-only second document": {text: head + "name: a\n---\n# nothing\n", wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"CR line breaks":               {text: strings.ReplaceAll(head+"name: a\n---\n"+head+"name: b\n", "\n", "\r"), wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"NEL line break before marker": {text: head + "name: a\u0085---\nname: b\n", wantErr: "a second YAML document", sentinel: ErrMultipleDocuments},
		"UTF-16":                       {text: utf16LE(head + "name: a\n---\n" + head + "name: b\n"), wantErr: "line 4: a second YAML document", sentinel: ErrMultipleDocuments},
		"UTF-16, one document":         {text: utf16LE(head + "name: a\n"), wantName: "a"},
		"syntax error":                 {text: head + "name: [a\n", wantErr: "parse YAML: yaml: line 3", sentinel: ErrSyntax},
		"duplicate key":                {text: head + "name: a\nname: b\n", wantErr: `key "name" already set`, sentinel: ErrSyntax},
		"empty":                        {text: "", wantErr: "the document must be a mapping with apiVersion: test.drakit.dev/v1 and kind: Doc", sentinel: ErrNotMapping},
		"list":                         {text: "- a\n", wantErr: "must be a mapping", sentinel: ErrNotMapping},
		"wrong apiVersion and kind": {text: "apiVersion: v9\nkind: Pod\nname: a\n", wantField: []string{
			`apiVersion: Unsupported value: "v9": supported values: "test.drakit.dev/v1"`,
			`kind: Unsupported value: "Pod": supported values: "Doc"`,
		}},
		"unknown field": {text: head + "nme: a\n", wantField: []string{"nme: Forbidden: unknown field; known fields: apiVersion, count, enabled, items, kind, labels, name, size"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d doc
			errs, err := Decode([]byte(tc.text), "test.drakit.dev/v1", "Doc", &d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if !errors.Is(err, tc.sentinel) {
					t.Errorf("error %v is not %v", err, tc.sentinel)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.wantField) {
				t.Errorf("field errors:\n got  %q\n want %q", got, tc.wantField)
			}
			if len(tc.wantField) == 0 && d.Name != tc.wantName {
				t.Errorf("name %q, want %q", d.Name, tc.wantName)
			}
		})
	}
}

// utf16LE encodes s as UTF-16LE with a byte order mark, which YAML decoders
// accept.
func utf16LE(s string) string {
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return string(out)
}
