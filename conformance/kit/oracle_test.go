package kit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

const oracleFeature = `Feature: the oracle judges the scheduler

  @kep-1 @core
  Scenario: a pod the scheduler leaves pending although a device is free
    Given the driver's DeviceClass exists
    And a ResourceClaim "missed" requesting 1 device
    When a pod "wronged" is created with the claim "missed"
    Then pod "wronged" stays pending as unschedulable

  @kep-1 @core
  Scenario: a claim the scheduler gives a device its selector does not select
    Given the driver's DeviceClass exists
    And a ResourceClaimTemplate "pinned" requesting 1 device pinned by its identity attribute
    When a pod "misplaced" is created with a claim "dev" from template "pinned"
    Then the claim "dev" of pod "misplaced" is allocated 1 device

  @kep-1 @core
  Scenario: a pod that truly cannot be scheduled
    Given the driver's DeviceClass exists
    And a ResourceClaim "too-many" requesting 1 more device than any node publishes
    When a pod "greedy" is created with the claim "too-many"
    Then pod "greedy" stays pending as unschedulable
`

// TestOracleCatchesWrongSchedulerDecisions feeds the kit a fake scheduler
// that decides wrongly: it leaves a pod pending whose claim a free device
// satisfies, and it gives a pinned claim another device. The reference
// allocator finds the missed allocation, the reference checker the broken
// selector; a pod that truly does not fit is proven unschedulable.
func TestOracleCatchesWrongSchedulerDecisions(t *testing.T) {
	t.Parallel()
	kube, _ := fakeClusterWithGPUs(t)
	cfg := testConfig(t)
	cfg.NodeCDIDir, cfg.NodeKubeletRootDir = t.TempDir(), t.TempDir()
	out := &strings.Builder{}
	cfg.Output = out
	node := newFakeNode(t, kube, testDriver, cfg.NodeCDIDir, cfg.NodeKubeletRootDir)
	node.wrong = map[string]wrongDecision{"missed": wrongUnschedulable, "misplaced-dev": wrongDevice}
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir, logs: node.logs, gates: fakeGates,
		features: fstest.MapFS{"kep-1-oracle/oracle.feature": {Data: []byte(oracleFeature)}}}
	res, _, err := st.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	want := map[string]struct {
		status  report.Status
		message string
	}{
		"a pod the scheduler leaves pending although a device is free": {report.StatusFailed,
			"the scheduler leaves pod wronged unschedulable, but the reference allocator allocates its claims on node 127.0.0.1: claim missed request gpu: gpu.drakit.dev/127.0.0.1/gpu-"},
		"a claim the scheduler gives a device its selector does not select": {report.StatusFailed,
			"the scheduler's allocation breaks the rules the reference checker knows"},
		"a pod that truly cannot be scheduled": {report.StatusPassed, ""},
	}
	for _, sr := range res.Scenarios {
		w, ok := want[sr.Name]
		if !ok {
			t.Errorf("unexpected scenario %q", sr.Name)
			continue
		}
		if sr.Status != w.status || !strings.Contains(sr.Message, w.message) {
			t.Errorf("%q: %s %q, want %s with %q", sr.Name, sr.Status, sr.Message, w.status, w.message)
		}
	}
	// The captured states replay with drakit allocate -f.
	saved, err := filepath.Glob(filepath.Join(cfg.ArtifactsDir, diagnosticsDir, "oracle-*.yaml"))
	if err != nil || len(saved) != 2 {
		t.Errorf("saved scenarios %v (%v), want the 2 of the wrong decisions", saved, err)
	}
	for _, path := range saved {
		if _, err := scenario.Load(path); err != nil {
			t.Errorf("the saved scenario does not load: %v", err)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("output:\n%s", out)
	}
}

// TestBoundElsewhere: a pod's allocated claim whose allocation names other
// nodes (an IMEX channel of another clique) keeps it off a node its pending
// claims would fit; one without a node selector, or naming the node, does
// not.
func TestBoundElsewhere(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "127.0.0.3", Labels: map[string]string{corev1.LabelHostname: "127.0.0.3"}}}
	w := &World{Suite: &Suite{Kube: fake.NewClientset(node)}}
	claim := func(name string, nodes ...string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Status.Allocation = &resourceapi.AllocationResult{}
		if len(nodes) > 0 {
			c.Status.Allocation.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}},
			}}}
		}
		return c
	}
	for _, tc := range []struct {
		claims []*resourceapi.ResourceClaim
		want   string
	}{
		{[]*resourceapi.ResourceClaim{claim("anywhere")}, ""},
		{[]*resourceapi.ResourceClaim{claim("here", "127.0.0.3", "127.0.0.4")}, ""},
		{[]*resourceapi.ResourceClaim{claim("anywhere"), claim("channel", "127.0.0.1", "127.0.0.2")}, "the pod's claim channel is allocated for other nodes"},
	} {
		got, err := w.boundElsewhere(t.Context(), tc.claims, "127.0.0.3")
		if err != nil || got != tc.want {
			t.Errorf("claims %d: %q, %v; want %q", len(tc.claims), got, err, tc.want)
		}
	}
}
