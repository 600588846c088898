package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// regenerate is the command that rewrites the generated documentation.
const regenerate = "make docs (go run ./cmd/drakit conformance catalogue --out docs/scenarios.md --readme README.md)"

// TestScenariosDocIsCurrent fails while docs/scenarios.md differs from what
// drakit conformance catalogue --out writes from the features: a scenario
// added, renamed or retagged fails here until the document shows it.
func TestScenariosDocIsCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := writeScenariosDoc(&want, features.FS); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("docs/scenarios.md is not current with the features; run: %s", regenerate)
	}
}

// TestReadmeCoverageIsCurrent fails while the README's table of profiles,
// between its coverage markers, differs from what the features say.
func TestReadmeCoverageIsCurrent(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceCoverage(string(readme), features.FS)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if string(readme) != want {
		t.Errorf("README.md's table of profiles is not current with the features; run: %s", regenerate)
	}
}

// TestCatalogueCommandWrites: without flags the command prints the
// catalogue; --out writes the document with the catalogue between its
// markers, --readme replaces only what is between the coverage markers.
func TestCatalogueCommandWrites(t *testing.T) {
	t.Parallel()
	var catalogue bytes.Buffer
	if err := report.WriteCatalogue(&catalogue, features.FS); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := newConformanceCatalogueCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("catalogue %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if got := run(); got != catalogue.String() {
		t.Errorf("catalogue printed something else than report.WriteCatalogue")
	}

	dir := t.TempDir()
	doc, readme := filepath.Join(dir, "scenarios.md"), filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("intro\n"+coverageBegin+"\nold\n"+coverageEnd+"\noutro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("--out", doc, "--readme", readme); out != "" {
		t.Errorf("catalogue --out --readme printed %q, want nothing", out)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := scenariosBegin + "\n" + catalogue.String() + scenariosEnd + "\n"; !strings.HasSuffix(string(b), want) {
		t.Errorf("%s does not end with the catalogue between its markers", doc)
	}
	var table strings.Builder
	if err := writeCoverage(&table, features.FS); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), table.String()) {
		t.Errorf("%s lacks the table of profiles", doc)
	}
	b, err = os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n" + coverageBegin + "\n" + table.String() + coverageEnd + "\noutro\n"; string(b) != want {
		t.Errorf("README after --readme:\n%s\nwant:\n%s", b, want)
	}
	for _, row := range []string{"| `core` | KEP-4381 |", "| `alpha` |", "| all | "} {
		if !strings.Contains(table.String(), row) {
			t.Errorf("table of profiles lacks %q:\n%s", row, table.String())
		}
	}

	if err := os.WriteFile(readme, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newConformanceCatalogueCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--readme", readme})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), coverageBegin) {
		t.Errorf("catalogue --readme on a file without markers: %v, want an error naming the markers", err)
	}
}
