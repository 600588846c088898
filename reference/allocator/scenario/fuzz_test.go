package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that no input makes Parse panic and that every scenario
// Parse accepts survives a Marshal/Parse round trip unchanged.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		_ = s.AllocatedState()
		out, err := Marshal(s)
		if err != nil {
			t.Fatalf("marshal valid scenario: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("parse marshalled scenario: %v\n%s", err, out)
		}
		if diff := cmp.Diff(s, again, quantityEqual); diff != "" {
			t.Fatalf("round trip changed the scenario:\n%s", diff)
		}
	})
}
