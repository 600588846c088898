package kit

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// fakeCluster is a fake clientset that names generateName namespaces and
// creates their default ServiceAccount, as the API server and the
// controller-manager do.
func fakeCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	kube := fake.NewClientset()
	var n atomic.Int64
	kube.PrependReactor("create", "namespaces", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ns := action.(k8stesting.CreateAction).GetObject().(*corev1.Namespace)
		if ns.Name == "" {
			ns.Name = ns.GenerateName + strings.Repeat("x", 4) + string(rune('a'+n.Add(1)))
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		if err := kube.Tracker().Add(sa); err != nil {
			t.Errorf("add ServiceAccount: %v", err)
		}
		return false, nil, nil
	})
	return kube
}

func testConfig(t *testing.T) Config {
	cfg := referenceDriverConfig()
	cfg.Kubeconfig = "unused"
	cfg.ArtifactsDir = t.TempDir()
	cfg.Format = "progress"
	cfg.NoColors = true
	cfg.Timeouts = Timeouts{API: 2 * time.Second, Publish: time.Second, PodStart: time.Second, PodDelete: time.Second, Cleanup: 2 * time.Second, SchedulerBinding: time.Second, FaultCommand: 5 * time.Second}
	// The reference declaration's command would break the emulated GPUs of
	// a live node whose root the environment names.
	wholeKind(cfg).FaultCommand = &declaration.FaultCommand{Inject: []string{"true", "{identity}", "{fault}"}, Reset: []string{"true", "{identity}"}}
	return cfg
}

const selfTestFeature = `Feature: kit self-test

  @kep-1
  Scenario: creates a claim and passes
    Given a ResourceClaim "c" requesting 2 devices
    Then the claim "c" is not allocated

  @kep-1
  Scenario: fails on a missing DeviceClass
    Given the driver's DeviceClass exists
    And a ResourceClaim "never" requesting 1 device

  @kep-2 @kep-2
  Scenario: skips without a node CDI directory
    Given the kit can read the node's CDI directory
    Then the claim "x" is not allocated

  Scenario: has an undefined step
    Given a step the kit does not define
`

// TestSuiteRun runs godog with the kit's real hooks and steps against a
// fake cluster, and checks what reaches the reports: outcomes per KEP tag,
// the skip reason, the failure with its diagnostics, and that cleanup left
// nothing behind.
func TestSuiteRun(t *testing.T) {
	t.Parallel()
	kube := fakeCluster(t)
	cfg := testConfig(t)
	cfg.Concurrency = 2
	cfg.Randomize = -1
	var out bytes.Buffer
	cfg.Output = &out
	s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir,
		features: fstest.MapFS{"kep-0-self/self.feature": {Data: []byte(selfTestFeature)}}}

	res, v, err := s.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	wantCounts := report.Counts{Passed: 1, Failed: 1, Skipped: 1, Undefined: 1}
	if diff := cmp.Diff(wantCounts, res.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	wantByTag := map[string]report.Counts{"@kep-1": {Passed: 1, Failed: 1}, "@kep-2": {Skipped: 1}, report.NoKEPTag: {Undefined: 1}}
	if diff := cmp.Diff(wantByTag, res.ByTag); diff != "" {
		t.Errorf("by tag (-want +got):\n%s", diff)
	}
	if res.Seed <= 0 {
		t.Errorf("seed = %d, want the seed picked for Randomize -1", res.Seed)
	}
	byName := map[string]report.ScenarioResult{}
	for _, sr := range res.Scenarios {
		byName[sr.Name] = sr
	}
	if got := byName["skips without a node CDI directory"]; got.Status != report.StatusSkipped || got.Message != cdiSkipReason {
		t.Errorf("skipped scenario = %+v, want status skipped with reason %q", got, cdiSkipReason)
	}
	failed := byName["fails on a missing DeviceClass"]
	if failed.Status != report.StatusFailed || !strings.Contains(failed.Message, "DeviceClass gpu.drakit.dev does not exist") {
		t.Errorf("failed scenario = %+v, want a failure naming the missing DeviceClass", failed)
	}
	if !strings.HasPrefix(failed.Diagnostics, "diagnostics/fails-on-a-missing-deviceclass-") {
		t.Errorf("failed scenario diagnostics = %q, want a diagnostics file", failed.Diagnostics)
	} else {
		data, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, failed.Diagnostics))
		if err != nil {
			t.Errorf("read diagnostics: %v", err)
		}
		for _, want := range []string{"DeviceClass gpu.drakit.dev does not exist", "===== ResourceClaims =====", "===== Driver pod logs ====="} {
			if !bytes.Contains(data, []byte(want)) {
				t.Errorf("diagnostics lack %q:\n%s", want, data)
			}
		}
	}
	if got := byName["creates a claim and passes"]; got.Status != report.StatusPassed || got.Message != "" || got.Diagnostics != "" {
		t.Errorf("passed scenario = %+v, want passed without message or diagnostics", got)
	}

	// Cleanup: no claims and no namespaces left.
	claims, err := kube.ResourceV1().ResourceClaims("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(claims.Items) != 0 {
		t.Errorf("claims left after the run: %v (err %v)", claims.Items, err)
	}
	nss, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nss.Items) != 0 {
		t.Errorf("namespaces left after the run: %v (err %v)", nss.Items, err)
	}

	// Reports.
	for _, f := range []string{JUnitFile, CucumberFile, SummaryFile, ReportFile} {
		if _, err := os.Stat(filepath.Join(cfg.ArtifactsDir, f)); err != nil {
			t.Errorf("report %s: %v", f, err)
		}
	}
	summary, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), string(summary)) {
		t.Errorf("the summary was not printed to Output")
	}
	// godog's own closing line would say "4 scenarios (2 passed, 1 failed,
	// 1 undefined)": the skipped scenario as passed.
	if want := "4 scenarios (1 passed, 1 failed, 1 skipped, 1 undefined)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("the progress output's closing line is not %q:\n%s", want, out.String())
	}
	for _, want := range []string{"driver checks: 4 total, 1 passed, 1 failed, 1 skipped, 0 not eligible, 1 undefined, 0 pending", cdiSkipReason,
		"\nverdict: Not conformant (1 finding)\n"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if v.Outcome != report.NotConformant {
		t.Errorf("verdict %s for a run with a failure, want %s", v.Outcome, report.NotConformant)
	}
	if os.Getenv("DRAKIT_SHOW_OUTPUT") != "" {
		t.Logf("output:\n%s", out.String())
	}
}

// TestSuiteRunNoScenarios: a tag filter that selects nothing is an error,
// not a pass.
func TestSuiteRunNoScenarios(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Tags = "@kep-9999"
	cfg.Output = &bytes.Buffer{}
	s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: fakeCluster(t), apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir,
		features: fstest.MapFS{"kep-0-self/self.feature": {Data: []byte(selfTestFeature)}}}
	_, v, err := s.run(context.Background())
	if !errors.Is(err, ErrNoScenarios) {
		t.Errorf("run: got %v, want ErrNoScenarios", err)
	}
	if v.Outcome != report.CouldNotCertify {
		t.Errorf("verdict %s with no scenarios, want %s", v.Outcome, report.CouldNotCertify)
	}
}

// TestRunFailsFast: without a reachable cluster Run must fail at once with
// an error that says what is wrong, not hang.
func TestRunFailsFast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.kubeconfig")
	// Port 1 on loopback: nothing listens there, connections are refused.
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(refused, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.kubeconfig")
	if err := os.WriteFile(garbage, []byte("{not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		kubeconfig string
		want       string
	}{
		"missing file":       {kubeconfig: filepath.Join(dir, "nope"), want: "load kubeconfig: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"not a kubeconfig":   {kubeconfig: garbage, want: "load kubeconfig " + garbage},
		"connection refused": {kubeconfig: refused, want: "reach API server https://127.0.0.1:1"},
		"no kubeconfig":      {kubeconfig: "", want: "Kubeconfig: required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Kubeconfig = tc.kubeconfig
			cfg.Output = &bytes.Buffer{}
			start := time.Now()
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: got %v, want an error containing %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Run took %v to fail", d)
			}
		})
	}
}

// countPickles counts the scenarios (outline rows included) of the
// embedded features.
func countPickles(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(features.FS, "*/*.feature")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := features.FS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), ids.NewId)
		if err != nil {
			t.Fatal(err)
		}
		n += len(gherkin.Pickles(*doc, f, ids.NewId))
	}
	return n
}
