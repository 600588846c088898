package declaration

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// FuzzParse checks that no input makes decoding, Default, Validate,
// KitSettings or the patterns panic; that every error matches ErrInvalid;
// that Validate changes nothing and answers the same twice; and that a
// valid declaration survives a YAML round trip.
func FuzzParse(f *testing.F) {
	var files []string
	for _, glob := range []string{"testdata/*.yaml", filepath.Join(examplesDir, "*.yaml")} {
		m, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decode(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode error without ErrInvalid: %v", err)
			}
			return
		}
		d.Default()
		before := deepCopy(t, d)
		first, second := d.Validate(), d.Validate()
		if diff := cmp.Diff(before, d, sameDeclaration); diff != "" {
			t.Fatalf("Validate changed the declaration:\n%s", diff)
		}
		if (first == nil) != (second == nil) || (first != nil && first.Error() != second.Error()) {
			t.Fatalf("Validate answered %v, then %v", first, second)
		}
		if first != nil {
			if !errors.Is(first, ErrInvalid) {
				t.Fatalf("Validate error without ErrInvalid: %v", first)
			}
			return
		}
		d.KitSettings()
		for _, k := range d.DeviceKinds {
			if k.Identity.Env == nil {
				continue
			}
			v := DeviceValues{Name: "gpu-0", Identity: "GPU-0", Attribute: func(string) (string, bool) { return "1", true }}
			if _, err := k.Identity.Env.ExpandName(v); err != nil {
				t.Fatalf("valid name pattern %q does not expand: %v", k.Identity.Env.Name, err)
			}
			if _, err := k.Identity.Env.ExpandValue(v); err != nil {
				t.Fatalf("valid value pattern %q does not expand: %v", k.Identity.Env.Value, err)
			}
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatalf("marshal valid declaration: %v", err)
		}
		again, err := Parse(out, "marshalled")
		if err != nil {
			t.Fatalf("parse marshalled declaration: %v\n%s", err, out)
		}
		if diff := cmp.Diff(d, again, sameDeclaration); diff != "" {
			t.Fatalf("round trip changed the declaration:\n%s", diff)
		}
	})
}
