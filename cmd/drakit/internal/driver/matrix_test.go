package driver

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"drakit.dev/drakit/reference/plaindriver"
)

// writeRun records a variant's run below dir as scripts/verdict-matrix.sh
// does.
func writeRun(t *testing.T, dir, variant, code, summary string) {
	t.Helper()
	vdir := filepath.Join(dir, variant)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vdir, "exit-code"), []byte(code+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vdir, "summary.txt"), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMatrixTable: every expected verdict gives full sensitivity and
// specificity and exit 0; a defect without its finding, a style not
// Conformant or a variant that should have run and did not fails it; a
// variant left out (not-run) is listed and not counted.
func TestMatrixTable(t *testing.T) {
	dir := t.TempDir()
	defects, styles := 0, 0
	for _, v := range plaindriver.Matrix() {
		switch {
		case v.Nodes > 1:
			if err := os.MkdirAll(filepath.Join(dir, v.Name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, v.Name, "not-run"), []byte("needs 2 nodes, the cluster has 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case v.Defect != "":
			defects++
			writeRun(t, dir, v.Name, "1", "scenario x\n  "+v.Finding+" | detail\nVerdict: Not conformant\n")
		default:
			styles++
			writeRun(t, dir, v.Name, "0", "Verdict: Conformant\n")
		}
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("intro\n"+matrixBegin+"\nold\n"+matrixEnd+"\noutro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := newMatrixCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"table", "--results", dir, "--readme", readme})
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf("table: %v\n%s", err, out)
	}
	totals := "Defects caught: " + strconv.Itoa(defects) + " / " + strconv.Itoa(defects) + " (sensitivity). Correct styles passed: " + strconv.Itoa(styles) + " / " + strconv.Itoa(styles) + " (specificity)."
	if !strings.Contains(out, totals) || !strings.Contains(out, "| multi-node | style | Conformant | not run (not counted) | needs 2 nodes, the cluster has 1 |") {
		t.Errorf("table:\n%s\nwant %q and multi-node not run", out, totals)
	}
	if !strings.Contains(out, `| extra-device | defect | Not conformant | Not conformant | which is not allocated to the pod's claims \| detail |`) {
		t.Errorf("table lacks extra-device's finding:\n%s", out)
	}
	data, _ := os.ReadFile(readme)
	if got := string(data); !strings.HasPrefix(got, "intro\n"+matrixBegin+"\n| variant |") || !strings.HasSuffix(got, matrixEnd+"\noutro\n") || strings.Contains(got, "old") {
		t.Errorf("README:\n%s", got)
	}
	table, _ := os.ReadFile(filepath.Join(dir, "table.md"))
	if string(table) != out {
		t.Error("table.md is not what was printed")
	}

	writeRun(t, dir, "wrong-device", "1", "Verdict: Not conformant\n")
	writeRun(t, dir, "env-only", "3", "Verdict: Could not certify\n")
	if err := os.Remove(filepath.Join(dir, "mounts", "exit-code")); err != nil {
		t.Fatal(err)
	}
	out, err = run()
	if err == nil {
		t.Errorf("table with wrong verdicts succeeded:\n%s", out)
	}
	for _, want := range []string{
		`| wrong-device | defect | Not conformant | Not conformant ✗ | no finding with "which is not allocated to the pod's claims" in summary.txt |`,
		"| env-only | style | Conformant | Could not certify ✗ | Verdict: Could not certify |",
		"| mounts | style | Conformant | not run (not counted) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
