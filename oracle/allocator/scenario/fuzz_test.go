package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// maxSeed is the largest testdata file FuzzParse starts from. The larger
// ones test the API's list limits with over a hundred entries: mutating
// them teaches the fuzzer nothing new and costs ten times as much per
// input (TestLoadValid and TestLoadInvalid cover them).
const maxSeed = 4 << 10

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
		if len(data) <= maxSeed {
			f.Add(data)
		}
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
