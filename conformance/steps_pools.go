package conformance

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// poolSteps publish resource pools of a test driver that only the kit
// writes: they check what the API server and the scheduler do with pools
// that are malformed (KEP-4815 validation and invalid pools), independent of
// the driver under test. The test driver has no kubelet plugin, so no pod
// that gets one of its devices can start; the steps only ever expect such
// pods to stay pending.
func poolSteps() []stepDef {
	return []stepDef{
		{`^a ResourceSlice "([^"]+)" of the test driver with both devices and sharedCounters is submitted$`, submitSliceWithDevicesAndCounters},
		{`^the test driver publishes a pool "([^"]+)" whose device consumes from a counter set no slice of the pool declares$`, publishPoolMissingCounterSet},
		{`^a ResourceClaim "([^"]+)" requesting 1 device of the test driver$`, claimTestDriverDevice},
		{`^pod "([^"]+)" stays pending as unschedulable because "([^"]+)"$`, podUnschedulableBecause},
	}
}

// allNodesTrue is ResourceSliceSpec.AllNodes for the test driver's slices.
var allNodesTrue = true

// TestDriverName is the driver of the pools the kit publishes itself.
const TestDriverName = "test-driver.conformance.drakit.dev"

// testObjectName names a cluster-scoped object of the scenario: the
// scenario's namespace keeps concurrent and leftover objects apart.
func (w *world) testObjectName(name string) string { return w.ns + "-" + name }

// testDeviceClass creates (once per scenario) the DeviceClass that selects
// the test driver's devices and returns its name.
func (w *world) testDeviceClass(ctx context.Context) (string, error) {
	name := w.testObjectName("test-driver")
	class := &resourceapi.DeviceClass{
		ObjectMeta: kitMeta(name),
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: "device.driver == " + strconv.Quote(TestDriverName),
		}}}},
	}
	if _, err := w.kube.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return name, nil
	}
	if _, err := w.kube.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create DeviceClass %s: %w", name, err)
	}
	w.ledger.add(kindDeviceClass, name)
	return name, nil
}

// testSlice is a slice of the test driver's pool, available on all nodes.
func (w *world) testSlice(name, pool string, sliceCount int64) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: kitMeta(w.testObjectName(name)),
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   TestDriverName,
			Pool:     resourceapi.ResourcePool{Name: w.testObjectName(pool), ResourceSliceCount: sliceCount},
			AllNodes: &allNodesTrue,
		},
	}
}

func (w *world) createSlice(ctx context.Context, s *resourceapi.ResourceSlice) error {
	if _, err := w.kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
	}
	w.ledger.add(kindResourceSlice, s.Name)
	return nil
}

// testCounters is a counter set's or a consumption's single counter.
func testCounters(v int64) map[string]resourceapi.Counter {
	return map[string]resourceapi.Counter{"memory": {Value: *resource.NewQuantity(v, resource.BinarySI)}}
}

func submitSliceWithDevicesAndCounters(ctx context.Context, name string) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	s := w.testSlice(name, name, 1)
	s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: testCounters(1 << 30)}}
	s.Spec.Devices = []resourceapi.Device{{
		Name:             "part-0",
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: testCounters(1 << 29)}},
	}}
	_, err = w.kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
	if err == nil {
		w.ledger.add(kindResourceSlice, s.Name)
	}
	w.submitted = &submission{kind: kindResourceSlice, name: s.Name, err: err}
	return nil
}

// publishPoolMissingCounterSet publishes a complete pool of two slices: one
// with a counter set, one with a device that consumes from another, absent
// set. Each slice is valid on its own; the pool is not (dra-1.37-spec.md
// §6, behavior 6).
func publishPoolMissingCounterSet(ctx context.Context, pool string) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	if _, err := w.testDeviceClass(ctx); err != nil {
		return err
	}
	counters := w.testSlice(pool+"-counters", pool, 2)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: testCounters(1 << 30)}}
	devices := w.testSlice(pool+"-devices", pool, 2)
	devices.Spec.Devices = []resourceapi.Device{{
		Name:             "part-0",
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-1", Counters: testCounters(1 << 29)}},
	}}
	for _, s := range []*resourceapi.ResourceSlice{counters, devices} {
		if err := w.createSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func claimTestDriverDevice(ctx context.Context, name string) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	class, err := w.testDeviceClass(ctx)
	if err != nil {
		return err
	}
	return w.createClaim(ctx, newClaim(name, claimSpec(class, 1)))
}

// podUnschedulableBecause waits for the scheduler to mark the pod
// unschedulable with a message that contains reason.
func podUnschedulableBecause(ctx context.Context, name, reason string) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	return poll(ctx, w.cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to be unschedulable because %q", name, reason), func(ctx context.Context) (bool, string, error) {
		pod, err := w.kube.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod %s was scheduled to node %s, expected it to stay pending because %q (%s)", name, pod.Spec.NodeName, reason, describePod(pod))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, reason) {
				return true, "", nil
			}
		}
		return false, describePod(pod), nil
	})
}
