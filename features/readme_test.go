package features_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// TestREADMECatalogue keeps the catalogue of docs/scenarios.md, between its
// scenarios markers, equal to `drakit conformance catalogue`: a scenario
// added, renamed or retagged fails here until the document shows it.
func TestREADMECatalogue(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- scenarios:begin -->\n", "<!-- scenarios:end -->"
	readme, err := os.ReadFile("../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/scenarios.md: want the catalogue between %q and %q", strings.TrimSpace(begin), end)
	}
	var want bytes.Buffer
	if err := report.WriteCatalogue(&want, features.FS); err != nil {
		t.Fatal(err)
	}
	if got := text[i+len(begin) : j]; got != want.String() {
		t.Errorf("docs/scenarios.md's catalogue differs from `drakit conformance catalogue`; run: make docs (go run ./cmd/drakit conformance catalogue --out docs/scenarios.md --readme README.md)")
	}
}
