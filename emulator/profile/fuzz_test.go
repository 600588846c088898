package profile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// FuzzParse checks that no input makes Parse, Default, Validate or Topology
// panic, and that every profile that validates survives a YAML round trip.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	builtins, err := filepath.Glob("builtin/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(files, builtins...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		p.Default()
		if errs := p.Validate(); len(errs) > 0 {
			return
		}
		if _, err := p.Topology(); err != nil {
			t.Fatalf("valid profile has no topology: %v", err)
		}
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("marshal valid profile: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("parse marshalled profile: %v\n%s", err, out)
		}
		again.Default()
		if diff := cmp.Diff(p, again, quantityEqual); diff != "" {
			t.Fatalf("round trip changed the profile:\n%s", diff)
		}
	})
}
