package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// FuzzDecode checks that no input makes Decode panic, that every problem is
// either a document error (one of the sentinels) or field errors, never both,
// that Decode sees a second document exactly when go.yaml.in/yaml/v3's full
// parse does (Decode looks for document markers first), and that what
// Decode accepts is exactly what sigs.k8s.io/yaml's UnmarshalStrict makes of
// the same bytes and survives a Marshal/Decode round trip.
func FuzzDecode(f *testing.F) {
	const head = "apiVersion: test.drakit.dev/v1\nkind: Doc\n"
	for _, seed := range []string{
		head + "name: a\ncount: 3\nsize: 7\nenabled: true\nlabels: {x: z}\nitems: [{value: 1.5}, {}]\n",
		"---\n" + head + "name: a\n...\n",
		head + "name: a\n---\n" + head + "name: b\n",
		head + "name: a\nname: b\n",
		head + "nme: 1\ncount: 3000000000\n",
		"- a\n",
		head + "name: a\r---\rname: b\r",
		"# c\n%YAML 1.2\n---\n" + head + "name: a\n...\n# end\n",
		head + "name: |\n  ---\n  x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		errs, err := Decode(data, "test.drakit.dev/v1", "Doc", &d)
		second, after := secondDocument(data)
		if second && (err == nil || errors.Is(err, ErrNotMapping)) {
			t.Fatalf("yaml.v3 sees a second document, Decode does not (%v)", err)
		}
		if errors.Is(err, ErrMultipleDocuments) && !second && !after {
			t.Fatalf("Decode sees a second document, yaml.v3 nothing after the first: %v", err)
		}
		if err != nil {
			if len(errs) > 0 {
				t.Fatalf("both an error (%v) and field errors (%v)", err, errs)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrMultipleDocuments) && !errors.Is(err, ErrNotMapping) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		if len(errs) > 0 {
			return
		}
		var want doc
		if err := yaml.UnmarshalStrict(data, &want); err != nil {
			t.Fatalf("Decode accepted what UnmarshalStrict rejects: %v", err)
		}
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("Decode gave %+v, UnmarshalStrict %+v", d, want)
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var again doc
		if errs, err := Decode(out, "test.drakit.dev/v1", "Doc", &again); err != nil || len(errs) > 0 {
			t.Fatalf("decode marshalled document: %v %v\n%s", err, errs, out)
		}
		if !reflect.DeepEqual(d, again) {
			t.Fatalf("round trip changed %+v into %+v", d, again)
		}
	})
}

// secondDocument reports whether yaml.v3 finds a second document in data,
// and whether it fails after the first one instead.
func secondDocument(data []byte) (second, after bool) {
	d := yamlv3.NewDecoder(bytes.NewReader(data))
	var n yamlv3.Node
	if d.Decode(&n) != nil {
		return false, false
	}
	err := d.Decode(&n)
	return err == nil, err != nil && !errors.Is(err, io.EOF)
}
