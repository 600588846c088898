package kit

import (
	"context"
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The kit's own test driver: pools the scenarios publish under a driver
// name of the kit's, for what the API server and the scheduler do with
// slices no real driver would publish.

// The test driver's attributes: role names a device for selectors (CEL
// cannot select by device name), partitionType is its partition type,
// scenario holds the namespace of the scenario that published the device,
// so that a scenario's claims take only its own pools' devices while other
// scenarios publish theirs.
const (
	TestRoleAttribute          = TestDriverName + "/role"
	TestPartitionTypeAttribute = TestDriverName + "/partitionType"
	TestScenarioAttribute      = TestDriverName + "/scenario"
)

// TestDriverName is the driver of the pools the kit publishes itself.
const TestDriverName = "test-driver.conformance.drakit.dev"

// testObjectName names a cluster-scoped object of the scenario: the
// scenario's namespace keeps concurrent and leftover objects apart.
func (w *World) TestObjectName(name string) string { return w.Ns + "-" + name }

// testDeviceClass creates (once per scenario) the DeviceClass that selects
// the test driver's devices of the scenario's pools and returns its name.
func (w *World) TestDeviceClass(ctx context.Context) (string, error) {
	name := w.TestObjectName("test-driver")
	class := &resourceapi.DeviceClass{
		ObjectMeta: KitMeta(name),
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.driver == %s && device.attributes[%s].?scenario.orValue("") == %s`,
				strconv.Quote(TestDriverName), strconv.Quote(TestDriverName), strconv.Quote(w.Ns)),
		}}}},
	}
	if _, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return name, nil
	}
	if _, err := w.Kube.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create DeviceClass %s: %w", name, err)
	}
	w.Ledger.Add(KindDeviceClass, name)
	return name, nil
}

// testSlice is a slice of the test driver's pool, available on all nodes,
// at generation 1: kube-controller-manager 1.37.2 cannot answer a
// ResourcePoolStatusRequest that lists a pool at generation 0 (the API
// server rejects the status: pools[].generation is +k8s:required), and the
// KEP-5677 scenarios ask about all of the test driver's pools.
func (w *World) TestSlice(name, pool string, sliceCount int64) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: KitMeta(w.TestObjectName(name)),
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   TestDriverName,
			Pool:     resourceapi.ResourcePool{Name: w.TestObjectName(pool), Generation: 1, ResourceSliceCount: sliceCount},
			AllNodes: ptr.To(true),
		},
	}
}

func (w *World) CreateSlice(ctx context.Context, s *resourceapi.ResourceSlice) error {
	if _, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
	}
	w.Ledger.Add(KindResourceSlice, s.Name)
	return nil
}

// testCounters is a counter set's or a consumption's single counter.
func TestCounters(v int64) map[string]resourceapi.Counter {
	return map[string]resourceapi.Counter{"memory": {Value: *resource.NewQuantity(v, resource.BinarySI)}}
}

// publishTestPool publishes a complete pool of the test driver: counter set
// gpu-0 (1Gi of "memory") declared in each of counterSlices slices, the
// devices, marked as the scenario's, in one more, and makes sure the
// scenario's DeviceClass of the test driver exists.
// More than one counter slice makes the pool invalid.
func (w *World) PublishTestPool(ctx context.Context, pool string, counterSlices int, devices ...resourceapi.Device) error {
	if _, err := w.TestDeviceClass(ctx); err != nil {
		return err
	}
	count := int64(counterSlices + 1)
	var slices []*resourceapi.ResourceSlice
	for i := range counterSlices {
		counters := w.TestSlice(fmt.Sprintf("%s-counters-%d", pool, i), pool, count)
		counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: TestCounters(1 << 30)}}
		slices = append(slices, counters)
	}
	withDevices := w.TestSlice(pool+"-devices", pool, count)
	withDevices.Spec.Devices = devices
	for i := range withDevices.Spec.Devices {
		withDevices.Spec.Devices[i].Attributes[TestScenarioAttribute] = resourceapi.DeviceAttribute{StringValue: ptr.To(w.Ns)}
	}
	for _, s := range append(slices, withDevices) {
		if err := w.CreateSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (w *World) SubmitSlice(ctx context.Context, s *resourceapi.ResourceSlice) {
	_, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(KindResourceSlice, s.Name)
	}
	w.Submitted = &Submission{Kind: KindResourceSlice, Name: s.Name, Err: err}
}

// podScheduled waits for the pod to be bound to a node; it need not start
// (the test driver has no kubelet plugin).
func (w *World) PodScheduled(ctx context.Context, name string) error {
	return Poll(ctx, w.Cfg.Timeouts.PodStart, "pod "+name+" to be scheduled", func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.Spec.NodeName != "", DescribePod(pod), nil
	})
}
