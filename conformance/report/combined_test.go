package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const combinedFeatures = `Feature: two KEPs

  @kep-10 @core
  Scenario: ten core

  @kep-10 @extended
  Scenario: ten extended

  @kep-20 @core
  Scenario: twenty

  @kep-30 @core
  Scenario: thirty, never selected
`

// cukeRun writes a cucumber report of scenarios given as "tag status name"
// into dir/cucumber.json.
func cukeRun(t *testing.T, dir string, scenarios ...[3]string) {
	t.Helper()
	var elems []string
	for i, s := range scenarios {
		elems = append(elems, `{"name":"`+s[2]+`","line":`+string(rune('3'+i))+`,"type":"scenario","tags":[{"name":"`+s[0]+`"}],`+
			`"steps":[{"keyword":"Then ","name":"x","result":{"status":"`+s[1]+`"}}]}`)
	}
	data := `[{"uri":"kep-x/two.feature","name":"two KEPs","elements":[` + strings.Join(elems, ",") + `]}]`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cucumber.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteCombinedSummary(t *testing.T) {
	fsys := fstest.MapFS{"kep-10-ten/two.feature": {Data: []byte(combinedFeatures)}}
	root := t.TempDir()
	cukeRun(t, filepath.Join(root, "gpu"), [3]string{"@kep-10", "passed", "ten core"}, [3]string{"@kep-20", "passed", "twenty"})
	cukeRun(t, filepath.Join(root, "nic"), [3]string{"@kep-10", "skipped", "ten extended"})
	var runs []Run
	for _, name := range []string{"gpu", "nic"} {
		r, err := ReadRun(filepath.Join(root, name), "cucumber.json")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	var b strings.Builder
	if err := WriteCombinedSummary(&b, fsys, runs, JudgeRuns(runs)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"drakit conformance summary of 2 runs",
		"run gpu: verdict: Conformant; 2 scenarios, 2 passed, 0 failed, 0 skipped",
		"run nic: verdict: Could not certify (2 reasons); 1 scenarios, 0 passed, 0 failed, 1 skipped",
		"all runs: 3 scenarios run, 2 passed, 0 failed, 1 skipped, 0 undefined, 0 pending; the features hold 4",
		"KEPs whose scenarios no run selected: @kep-30",
		"nic: skipped kep-x/two.feature:3  ten extended",
		"\nverdict: Could not certify (2 reasons)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("combined summary lacks %q:\n%s", want, got)
		}
	}
	var kep10 string
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "@kep-10 ") {
			kep10 = strings.Join(strings.Fields(line), " ")
		}
	}
	if want := "@kep-10 2 2 1 0 1 0 0 gpu,nic"; kep10 != want {
		t.Errorf("line of @kep-10 = %q, want %q", kep10, want)
	}

	// A run that failed makes the runs together Not conformant.
	cukeRun(t, filepath.Join(root, "nic"), [3]string{"@kep-10", "failed", "ten extended"})
	nic, err := ReadRun(filepath.Join(root, "nic"), "cucumber.json")
	if err != nil {
		t.Fatal(err)
	}
	runs[1] = nic
	b.Reset()
	if err := WriteCombinedSummary(&b, fsys, runs, JudgeRuns(runs)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nverdict: Not conformant (1 finding)\n") {
		t.Errorf("a failed run did not make the runs Not conformant:\n%s", b.String())
	}
}

func TestReadRunNamesTheMissingReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpu")
	_, err := ReadRun(dir, "cucumber.json")
	if err == nil || !strings.Contains(err.Error(), "read run "+dir) {
		t.Fatalf("ReadRun of a directory without a report: err = %v, want one naming the run", err)
	}
}

func TestWriteCatalogue(t *testing.T) {
	fsys := fstest.MapFS{
		"kep-10-ten-things/two.feature": {Data: []byte(combinedFeatures)},
	}
	var b strings.Builder
	if err := WriteCatalogue(&b, fsys); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"4 scenarios over 3 KEPs: 4 check the driver, 0 the cluster",
		"| KEP-10 | ten things | 1 | 1 | 2 | 0 |",
		"| KEP-20 | kep 10 ten things | 1 | 0 | 1 | 0 |",
		"<details><summary>KEP-10 ten things: 2 scenarios</summary>",
		"- extended, driver check: ten extended (`kep-10-ten-things/two.feature`)",
		"- core, driver check: thirty, never selected (`kep-10-ten-things/two.feature`)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("catalogue lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "<summary>KEP-10 ") > strings.Index(got, "<summary>KEP-20 ") {
		t.Errorf("catalogue not ordered by KEP number:\n%s", got)
	}
}
