package kit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/report"
)

const outlineTestFeature = `Feature: kit self-test outline

  @kep-3
  Scenario Outline: claim <name> is not allocated
    Given a ResourceClaim "<name>" requesting 1 device
    Then the claim "<name>" is not allocated

    Examples:
      | name |
      | a    |
      | b    |

    @second
    Examples:
      | name |
      | c    |
`

// TestSessionRunsOneScenarioAtATime runs every scenario of the self-test
// features through a Session, each by its line (example rows by theirs), with
// the kit's real hooks and steps against a fake cluster, and checks that
// each call ran exactly that scenario and that Close reports them all as Run
// would.
func TestSessionRunsOneScenarioAtATime(t *testing.T) {
	t.Parallel()
	kube := fakeCluster(t)
	cfg := testConfig(t)
	var out bytes.Buffer
	cfg.Output = &out
	fsys := fstest.MapFS{
		"kep-0-self/self.feature":       {Data: []byte(selfTestFeature)},
		"kep-0-self/outline.feature":    {Data: []byte(outlineTestFeature)},
		"kep-0-self/not-a-feature.text": {Data: []byte("ignored")},
	}
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir, features: fsys}
	ctx := context.Background()
	x, err := st.open(ctx)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	selected, err := report.Selected(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(selected) != 7 {
		t.Fatalf("the self-test features have %d scenarios, want 7", len(selected))
	}
	want := map[string]report.Status{
		"creates a claim and passes":         report.StatusPassed,
		"fails on a missing DeviceClass":     report.StatusFailed,
		"skips without a node CDI directory": report.StatusSkipped,
		"has an undefined step":              report.StatusUndefined,
		"claim a is not allocated":           report.StatusPassed,
		"claim b is not allocated":           report.StatusPassed,
		"claim c is not allocated":           report.StatusPassed,
	}
	for _, sel := range selected {
		got, err := x.RunScenario(ctx, sel.URI, sel.Line)
		if err != nil {
			t.Errorf("RunScenario(%s:%d): %v", sel.URI, sel.Line, err)
			continue
		}
		if got.URI != sel.URI || got.Line != sel.Line || got.Name != sel.Name || got.Status != want[sel.Name] {
			t.Errorf("RunScenario(%s:%d) = %s:%d %q %s, want %s:%d %q %s", sel.URI, sel.Line, got.URI, got.Line, got.Name, got.Status, sel.URI, sel.Line, sel.Name, want[sel.Name])
		}
		if diff := cmp.Diff(sel.Tags, got.Tags); diff != "" {
			t.Errorf("RunScenario(%s:%d) tags (-selected +ran):\n%s", sel.URI, sel.Line, diff)
		}
		if sel.Name == "skips without a node CDI directory" && got.Message != cdiSkipReason {
			t.Errorf("skip reason = %q, want %q", got.Message, cdiSkipReason)
		}
		if sel.Name == "fails on a missing DeviceClass" && !strings.Contains(got.Message, "DeviceClass gpu.drakit.dev does not exist") {
			t.Errorf("failure = %q, want the missing DeviceClass", got.Message)
		}
	}
	for _, bad := range []struct {
		uri  string
		line int
		want string
	}{
		{"kep-0-self/self.feature", 2, "no scenario or example row at kep-0-self/self.feature:2"},
		{"kep-0-self/outline.feature", 4, "is a Scenario Outline"},
		{"kep-0-self/missing.feature", 4, "read feature kep-0-self/missing.feature"},
	} {
		if _, err := x.RunScenario(ctx, bad.uri, bad.line); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("RunScenario(%s:%d): got %v, want an error containing %q", bad.uri, bad.line, err, bad.want)
		}
	}

	res, err := x.Close(ctx)
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	if diff := cmp.Diff(report.Counts{Passed: 4, Failed: 1, Skipped: 1, Undefined: 1}, res.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	wantByTag := map[string]report.Counts{"@kep-1": {Passed: 1, Failed: 1}, "@kep-2": {Skipped: 1}, "@kep-3": {Passed: 3}, report.NoKEPTag: {Undefined: 1}}
	if diff := cmp.Diff(wantByTag, res.ByTag); diff != "" {
		t.Errorf("by tag (-want +got):\n%s", diff)
	}
	for _, f := range []string{JUnitFile, CucumberFile, SummaryFile, ReportFile} {
		if _, err := os.Stat(filepath.Join(cfg.ArtifactsDir, f)); err != nil {
			t.Errorf("report %s: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, CucumberFile))
	if err != nil {
		t.Fatal(err)
	}
	reread, err := report.ParseCucumberJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the session's cucumber.json: %v", err)
	}
	if diff := cmp.Diff(res.Counts, reread.Counts); diff != "" {
		t.Errorf("cucumber.json counts differ from Close's (-close +file):\n%s", diff)
	}
	left, err := filepath.Glob(filepath.Join(cfg.ArtifactsDir, ".scenario-*"))
	if err != nil || len(left) != 0 {
		t.Errorf("per-scenario reports left behind: %v (err %v)", left, err)
	}
	if !strings.Contains(out.String(), "driver checks: 7 total, 4 passed, 1 failed, 1 skipped, 0 not eligible, 1 undefined, 0 pending") {
		t.Errorf("Close did not print the summary:\n%s", out.String())
	}
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(nss.Items) != 0 {
		t.Errorf("namespaces left: %d (err %v)", len(nss.Items), err)
	}
	if _, err := x.RunScenario(ctx, selected[0].URI, selected[0].Line); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("RunScenario after Close: got %v, want ErrSessionClosed", err)
	}
	if _, err := x.Close(ctx); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("second Close: got %v, want ErrSessionClosed", err)
	}
}

// TestSessionCloseWithoutScenarios: a session in which nothing ran
// certifies nothing.
func TestSessionCloseWithoutScenarios(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Output = &bytes.Buffer{}
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: fakeCluster(t), apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir,
		features: fstest.MapFS{"kep-0-self/self.feature": {Data: []byte(selfTestFeature)}}}
	x, err := st.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Close(context.Background())
	if !errors.Is(err, ErrNoScenarios) {
		t.Errorf("Close: got %v, want ErrNoScenarios", err)
	}
	if v := report.Judge(res); v.Outcome != report.CouldNotCertify {
		t.Errorf("verdict %s with no scenarios, want %s", v.Outcome, report.CouldNotCertify)
	}
}
