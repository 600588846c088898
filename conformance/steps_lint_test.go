package conformance

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// TestLintRulesFailADefectivePool runs the @slices scenarios against a
// driver that publishes, beside the fake node's GPUs, a defective pool per
// rule: every scenario fails, with a finding that names its rule, the pool,
// the slice and the device.
func TestLintRulesFailADefectivePool(t *testing.T) {
	t.Parallel()
	const driver = "defective.example.com"
	kube, ctx := fakeClusterWithGPUs(t)
	dev := func(name string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) resourceapi.Device {
		return resourceapi.Device{Name: name, Attributes: attrs}
	}
	owned := func(s resourceapi.ResourceSlice) resourceapi.ResourceSlice {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "127.0.0.1", UID: "node-127-0-0-1", Controller: ptr.To(true)}}
		return s
	}
	incomplete := owned(slice("incomplete-0", driver, "127.0.0.1", "incomplete", 1, dev("a", nil)))
	incomplete.Spec.Pool.ResourceSliceCount = 2
	counters := owned(slice("counters-0", driver, "127.0.0.1", "counters", 1, resourceapi.Device{Name: "part",
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "missing", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("1Gi")}}}}}))
	for _, s := range []resourceapi.ResourceSlice{
		incomplete,
		owned(slice("standard-0", driver, "127.0.0.1", "standard", 1, dev("numa-as-string", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{numaNodeAttribute: str("0")}))),
		owned(slice("foreign-0", driver, "127.0.0.1", "foreign", 1, dev("borrows", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{testDriver + "/uuid": str("x")}))),
		owned(slice("twins-0", driver, "127.0.0.1", "twins", 1, dev("one", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("same")}),
			dev("two", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("same")}))),
		slice("ghost-0", driver, "ghost", "ghost", 1, dev("g", nil)),
		counters,
	} {
		if _, err := kube.ResourceV1().ResourceSlices().Create(ctx, &s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	cfg.DriverName, cfg.DeviceClassName, cfg.Tags = driver, testDriver, "@slices"
	out := &strings.Builder{}
	cfg.Output = out
	st := &suite{cfg: cfg, kube: kube, apiHost: "127.0.0.1", apiPort: 6443, artifacts: cfg.ArtifactsDir, features: features.FS, gates: fakeGates}
	res, _, err := st.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// By the scenario that runs the rule.
	want := map[string]string{
		"pools are complete":                 "rule pools: pool incomplete: generation 1 has 1 slices, its resourceSliceCount is 2",
		"standard attributes are the":        "rule standard-attributes: pool standard, ResourceSlice standard-0, device numa-as-string: resource.kubernetes.io/numaNode is the string \"0\"",
		"in its own domain":                  "rule qualified-names: pool foreign, ResourceSlice foreign-0, device borrows: attribute gpu.drakit.dev/uuid is in domain gpu.drakit.dev, driver gpu.drakit.dev's",
		"identity names it alone":            "rule identity: pool twins, ResourceSlice twins-0, device two: defective.example.com/uuid \"same\" is also the identity of device twins/one",
		"owned by that Node":                 "rule node-selection: pool ghost, ResourceSlice ghost-0: nodeName ghost names no Node of the cluster",
		"Every counter a device consumes is": "rule counters: pool counters, ResourceSlice counters-0, device part: consumes counter set missing, which no slice of the pool declares",
	}
	judged := 0
	for _, sr := range res.Scenarios {
		for name, finding := range want {
			if !strings.Contains(sr.Name, name) {
				continue
			}
			judged++
			if sr.Status != report.StatusFailed || !strings.Contains(sr.Message, finding) {
				t.Errorf("%q: %s %q, want failed with %q", sr.Name, sr.Status, sr.Message, finding)
			}
		}
	}
	if judged != len(want) {
		t.Errorf("%d lint scenarios judged, want %d", judged, len(want))
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}
