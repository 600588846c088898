package interpose

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseRules: any input is parsed or refused with ErrInvalidRules,
// never a panic, and what is accepted parses again to the same rules
// count.
func FuzzParseRules(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRules) {
				t.Fatalf("error %v does not wrap ErrInvalidRules", err)
			}
			return
		}
		again, err := ParseRules(data)
		if err != nil || len(again) != len(rules) {
			t.Fatalf("accepted input parsed again: %d rules, %v; first %d", len(again), err, len(rules))
		}
	})
}
