package kit

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/conformance/lint"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

const lintDriver = "defective.example.com"

// lintRun is a run of the @slices scenarios against lintDriver.
type lintRun struct {
	res              report.Result
	verdict          report.Verdict
	summary, yaml    string
	output           *strings.Builder
	warningsListed   string // the summary's Warnings section
	warningsReported string // the report's warnings' messages
}

// runLint runs the @slices scenarios against lintDriver, which publishes
// the slices beside the fake node's GPUs.
func runLint(t *testing.T, slices ...resourceapi.ResourceSlice) lintRun {
	t.Helper()
	kube, ctx := fakeClusterWithGPUs(t)
	for _, s := range slices {
		if _, err := kube.ResourceV1().ResourceSlices().Create(ctx, &s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	cfg.Declaration.Driver.Name, wholeKind(cfg).DeviceClass, cfg.Tags = lintDriver, testDriver, "@slices"
	r := lintRun{output: &strings.Builder{}}
	cfg.Output = r.output
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir, features: features.FS, gates: fakeGates}
	var err error
	if r.res, r.verdict, err = st.run(context.Background()); err != nil {
		t.Fatalf("run: %v", err)
	}
	summary, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	r.summary, r.yaml = string(summary), string(data)
	_, r.warningsListed, _ = strings.Cut(r.summary, "\nWarnings (not counted in the verdict):\n")
	r.warningsListed, _, _ = strings.Cut(r.warningsListed, "\n\n")
	var doc struct {
		Warnings []report.Reason `json:"warnings"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("read %s: %v", ReportFile, err)
	}
	for _, w := range doc.Warnings {
		r.warningsReported += w.Message + "\n"
	}
	return r
}

// nodeOwned is s owned by the fake node, as the kubelet plugin library
// publishes it.
func nodeOwned(s resourceapi.ResourceSlice) resourceapi.ResourceSlice {
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "127.0.0.1", UID: "node-127-0-0-1", Controller: ptr.To(true)}}
	return s
}

func lintDevice(name string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: attrs}
}

// warningOnly are two pools that break only what no KEP or API requires:
// one names an attribute in the test driver's domain, the other is not
// owned by its Node. The scenario of each rule and the warning it gives.
func warningOnly() ([]resourceapi.ResourceSlice, map[string][2]string) {
	return []resourceapi.ResourceSlice{
			nodeOwned(slice("foreign-0", lintDriver, "127.0.0.1", "foreign", 1, lintDevice("borrows", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{testDriver + "/uuid": str("x")}))),
			slice("unowned-0", lintDriver, "127.0.0.1", "unowned", 1, lintDevice("u", nil)),
		}, map[string][2]string{
			"standard attributes are the": {"qualified-names", "pool foreign, ResourceSlice foreign-0, device borrows: attribute gpu.drakit.dev/uuid is in domain gpu.drakit.dev, driver gpu.drakit.dev's"},
			"name a Node of the cluster":  {"node-selection", "pool unowned, ResourceSlice unowned-0: for node 127.0.0.1 but not owned by that Node (owner nobody)"},
		}
}

// cites matches a lint message: the rule, its basis (a KEP, the
// declaration, or none for a warning) and what it found.
var cites = regexp.MustCompile(`^rule ([a-z-]+) \((KEP-[0-9]+|the declaration|` + regexp.QuoteMeta(lint.NoBasis) + `)[^)]*\): (.*)`)

// TestLintRulesFailADefectivePool runs the @slices scenarios against a
// driver that publishes, beside the fake node's GPUs, a defective pool per
// rule: every scenario fails, with a finding that cites its rule and its
// basis and names the pool, the slice and the device. The warnings of the
// pools that break only what no KEP or API requires are attached to their
// scenarios, never in their failures.
func TestLintRulesFailADefectivePool(t *testing.T) {
	t.Parallel()
	incomplete := nodeOwned(slice("incomplete-0", lintDriver, "127.0.0.1", "incomplete", 1, lintDevice("a", nil)))
	incomplete.Spec.Pool.ResourceSliceCount = 2
	counters := nodeOwned(slice("counters-0", lintDriver, "127.0.0.1", "counters", 1, resourceapi.Device{Name: "part",
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "missing", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("1Gi")}}}}}))
	warned, warnings := warningOnly()
	r := runLint(t, append(warned,
		incomplete,
		nodeOwned(slice("standard-0", lintDriver, "127.0.0.1", "standard", 1, lintDevice("numa-as-string", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{numaNodeAttribute: str("0")}))),
		nodeOwned(slice("twins-0", lintDriver, "127.0.0.1", "twins", 1, lintDevice("one", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("same")}),
			lintDevice("two", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("same")}))),
		nodeOwned(slice("ghost-0", lintDriver, "ghost", "ghost", 1, lintDevice("g", nil))),
		counters,
	)...)
	// By the scenario that runs the rule: the rule and its finding.
	want := map[string][2]string{
		"pools are complete":                 {"pools", "pool incomplete: generation 1 has 1 slices, its resourceSliceCount is 2"},
		"standard attributes are the":        {"standard-attributes", "pool standard, ResourceSlice standard-0, device numa-as-string: resource.kubernetes.io/numaNode is the string \"0\""},
		"identity names it alone":            {"identity", "pool twins, ResourceSlice twins-0, device two: defective.example.com/uuid \"same\" is also the identity of device twins/one"},
		"name a Node of the cluster":         {"node-selection", "pool ghost, ResourceSlice ghost-0: nodeName ghost names no Node of the cluster"},
		"Every counter a device consumes is": {"counters", "pool counters, ResourceSlice counters-0, device part: consumes counter set missing, which no slice of the pool declares"},
	}
	judged := 0
	for _, sr := range r.res.Scenarios {
		for name, w := range want {
			if !strings.Contains(sr.Name, name) {
				continue
			}
			judged++
			m := cites.FindStringSubmatch(sr.Message)
			if sr.Status != report.StatusFailed || m == nil || m[1] != w[0] || m[2] == lint.NoBasis || !strings.HasPrefix(m[3], w[1]) {
				t.Errorf("%q: %s %q, want failed with rule %s, its basis and %q", sr.Name, sr.Status, sr.Message, w[0], w[1])
			}
			if warning := warnings[name][1]; warning != "" && (strings.Contains(sr.Message, warning) || !strings.Contains(strings.Join(sr.Warnings, "\n"), warning)) {
				t.Errorf("%q: failed with %q, warnings %q: want the warning %q listed apart", sr.Name, sr.Message, sr.Warnings, warning)
			}
		}
	}
	if judged != len(want) {
		t.Errorf("%d lint scenarios judged, want %d", judged, len(want))
	}
	if t.Failed() {
		t.Logf("output:\n%s", r.output)
	}
}

// TestLintWarningsPass: a driver whose pools break only what no KEP or
// API requires passes the lint scenarios; each warning cites its rule and
// says it has no such basis, and summary.txt and conformance-report.yaml
// list it apart from the verdict, which has no finding.
func TestLintWarningsPass(t *testing.T) {
	t.Parallel()
	slices, warnings := warningOnly()
	r := runLint(t, slices...)
	judged := 0
	for _, sr := range r.res.Scenarios {
		for name, w := range warnings {
			if !strings.Contains(sr.Name, name) {
				continue
			}
			judged++
			if sr.Status != report.StatusPassed {
				t.Errorf("%q: %s %q, want passed: a warning is not a finding", sr.Name, sr.Status, sr.Message)
			}
			m := cites.FindStringSubmatch(strings.Join(sr.Warnings, "\n"))
			if len(sr.Warnings) != 1 || m == nil || m[1] != w[0] || m[2] != lint.NoBasis || !strings.HasPrefix(m[3], w[1]) {
				t.Errorf("%q: warnings %q, want one citing rule %s, that it has no KEP or API basis, and %q", sr.Name, sr.Warnings, w[0], w[1])
			}
			if !strings.Contains(r.warningsListed, w[1]) {
				t.Errorf("summary.txt lists no warning %q under its Warnings:\n%s", w[1], r.summary)
			}
			if !strings.Contains(r.warningsReported, w[1]) {
				t.Errorf("%s lists no warning %q under warnings:\n%s", ReportFile, w[1], r.yaml)
			}
		}
	}
	if judged != len(warnings) {
		t.Errorf("%d lint scenarios judged, want %d", judged, len(warnings))
	}
	for _, f := range r.verdict.Findings {
		if strings.Contains(f.Message, "rule ") {
			t.Errorf("a lint finding in the verdict: %s", f.Message)
		}
	}
	if len(r.verdict.Warnings) != len(warnings) {
		t.Errorf("the verdict's warnings %v, want %d", r.verdict.Warnings, len(warnings))
	}
	if t.Failed() {
		t.Logf("output:\n%s\nsummary:\n%s", r.output, r.summary)
	}
}
