package clusterprofile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse checks that no input makes Parse, Default, Validate or Resolve
// panic, that Validate's verdict survives a YAML round trip of a valid
// profile, and that Resolve gives every node a profile.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	builtins, _ := filepath.Glob("builtin/*.yaml")
	for _, file := range append(files, builtins...) {
		if filepath.Base(file) == "scale-1000.yaml" {
			continue // resolving 1000 nodes per input slows the fuzzer down
		}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := Parse(data)
		if err != nil {
			return
		}
		cp.Default()
		if errs := cp.Validate(); len(errs) > 0 {
			return
		}
		out, err := yaml.Marshal(cp)
		if err != nil {
			t.Fatalf("marshal valid profile: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("parse marshalled profile: %v\n%s", err, out)
		}
		again.Default()
		if errs := again.Validate(); len(errs) > 0 {
			t.Fatalf("round trip made a valid profile invalid: %v\n%s", errs, out)
		}
		if !reflect.DeepEqual(cp, again) {
			t.Fatalf("round trip changed the profile:\n%s", out)
		}
		total := 0
		for _, g := range cp.Spec.NodeGroups {
			total += g.Count
		}
		if total > 100 {
			return // keep each input fast
		}
		c, err := Resolve(&Source{Profile: cp, Name: "fuzz", Dir: "testdata"})
		if err != nil {
			return
		}
		if len(c.Nodes) != total {
			t.Fatalf("%d nodes resolved, groups count %d", len(c.Nodes), total)
		}
		for _, n := range c.Nodes {
			if n.Profile == nil {
				t.Fatalf("node %s has no profile", n.Name)
			}
		}
	})
}
