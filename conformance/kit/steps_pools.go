package kit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/report"
)

// poolSteps publish resource pools of a test driver that only the kit
// writes: they check what the API server and the scheduler do with pools
// that are malformed (KEP-4815 validation and invalid pools), independent of
// the driver under test. The test driver has no kubelet plugin, so no pod
// that gets one of its devices can start unless its slice skips node
// operations (KEP-5945, steps_nodeops.go); these steps only ever expect such
// pods to stay pending.
func (w *World) poolSteps() []StepDef {
	return []StepDef{
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with both devices and sharedCounters is submitted$`, Fn: w.submitSliceWithDevicesAndCounters},
		{Pattern: `^the test driver publishes an invalid pool "([^"]+)": (.+)$`, Fn: w.publishInvalidPool},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 device of the test driver$`, Fn: w.claimTestDriverDevice},
		{Pattern: `^pod "([^"]+)" stays pending as unschedulable because "([^"]+)"$`, Fn: w.podUnschedulableBecause},
		{Pattern: `^the API server keeps the ResourceSlice field "(partitionTypeAttribute|compatibilityGroups|skipNodeOperations)"$`, Fn: w.apiServerKeepsSliceField},
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with a partitionTypeAttribute but no device that consumes counters is submitted$`, Fn: w.submitSlicePartitionTypeWithoutCounters},
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver whose counter-consuming device lacks the partitionTypeAttribute is submitted$`, Fn: w.submitSlicePartitionTypeMissing},
		{Pattern: `^the test driver publishes a pool "([^"]+)" of devices "left" in compatibility group "a", "right" in group "b" and "both" in groups "a" and "b", with counters for all three$`, Fn: w.publishPoolCompatibilityGroups},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the test driver's devices "([^"]+)" and "([^"]+)"$`, Fn: w.claimTestDriverDevices},
		{Pattern: `^pod "([^"]+)" is scheduled$`, Fn: w.PodScheduled},
		{Pattern: `^the claim "([^"]+)" is allocated the test driver's devices "([^"]+)" and "([^"]+)"$`, Fn: w.claimAllocatedTestDevices},
	}
}

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

func (w *World) submitSliceWithDevicesAndCounters(ctx context.Context, name string) error {
	s := w.TestSlice(name, name, 1)
	s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: TestCounters(1 << 30)}}
	s.Spec.Devices = []resourceapi.Device{testDevice("part-0", "gpu-0")}
	w.SubmitSlice(ctx, s)
	return nil
}

// Defects of publishInvalidPool: each slice is valid on its own, the pool
// is not (dra-1.37-spec.md §6, behavior 6).
const (
	poolMissingCounterSet   = "a device draws from a counter set no slice declares"
	poolMissingCounter      = "a device draws a counter its counter set lacks"
	poolDuplicateCounterSet = "two slices declare the same counter set"
)

// publishInvalidPool publishes a complete pool of the test driver with one
// of the defects above.
func (w *World) publishInvalidPool(ctx context.Context, pool, defect string) error {
	switch defect {
	case poolMissingCounterSet:
		return w.PublishTestPool(ctx, pool, 1, testDevice("part-0", "gpu-1"))
	case poolMissingCounter:
		d := testDevice("part-0", "gpu-0")
		d.ConsumesCounters[0].Counters["engines"] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
		return w.PublishTestPool(ctx, pool, 1, d)
	case poolDuplicateCounterSet:
		return w.PublishTestPool(ctx, pool, 2, testDevice("part-0", "gpu-0"))
	}
	return fmt.Errorf("unknown pool defect %q (known: %q, %q, %q)", defect, poolMissingCounterSet, poolMissingCounter, poolDuplicateCounterSet)
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

// testDevice is a device of the test driver named and with role name that
// draws a quarter of counter set set's memory, in the given compatibility
// groups, with partition type "quarter".
func testDevice(name, set string, groups ...string) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			TestRoleAttribute:          {StringValue: ptr.To(name)},
			TestPartitionTypeAttribute: {StringValue: ptr.To("quarter")},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: TestCounters(1 << 28), CompatibilityGroups: groups}},
	}
}

// partitionableTestSlice is a valid one-slice pool of counter-consuming
// test devices, by role (the counter set lives in no slice: slice validation
// does not look across slices).
func (w *World) partitionableTestSlice(name string, roles ...string) *resourceapi.ResourceSlice {
	s := w.TestSlice(name, name, 1)
	for _, role := range roles {
		s.Spec.Devices = append(s.Spec.Devices, testDevice(role, "gpu-0"))
	}
	return s
}

// apiServerKeepsSliceField skips the scenario when the API server drops an
// alpha field of ResourceSlices (its feature gate is off): a dry-run create
// of a valid slice that sets it shows whether it is stored.
func (w *World) apiServerKeepsSliceField(ctx context.Context, field string) (context.Context, error) {
	s := w.partitionableTestSlice("gate-check", "left")
	gate := ""
	switch field {
	case "partitionTypeAttribute":
		s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(TestPartitionTypeAttribute))
		gate = "DRAPartitionableDevicesType"
	case "compatibilityGroups":
		s.Spec.Devices[0].ConsumesCounters[0].CompatibilityGroups = []string{"a"}
		gate = "DRADeviceCompatibilityGroups"
	case "skipNodeOperations":
		s.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
		gate = "DRAOptionalNodeOperations"
	}
	got, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return ctx, fmt.Errorf("dry-run create of a ResourceSlice that sets %s: %w", field, err)
	}
	kept := got.Spec.PartitionTypeAttribute != nil
	switch field {
	case "compatibilityGroups":
		kept = len(got.Spec.Devices) == 1 && len(got.Spec.Devices[0].ConsumesCounters) == 1 &&
			len(got.Spec.Devices[0].ConsumesCounters[0].CompatibilityGroups) > 0
	case "skipNodeOperations":
		kept = len(got.Spec.SkipNodeOperations) > 0
	}
	if !kept {
		return Skip(ctx, fmt.Sprintf("%sneeds feature gate %s: the API server drops ResourceSlice %s", report.NotEligiblePrefix, gate, field))
	}
	return ctx, nil
}

func (w *World) SubmitSlice(ctx context.Context, s *resourceapi.ResourceSlice) {
	_, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(KindResourceSlice, s.Name)
	}
	w.Submitted = &Submission{Kind: KindResourceSlice, Name: s.Name, Err: err}
}

func (w *World) submitSlicePartitionTypeWithoutCounters(ctx context.Context, name string) error {
	s := w.partitionableTestSlice(name, "plain")
	s.Spec.Devices[0].ConsumesCounters = nil
	s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(TestPartitionTypeAttribute))
	w.SubmitSlice(ctx, s)
	return nil
}

func (w *World) submitSlicePartitionTypeMissing(ctx context.Context, name string) error {
	s := w.partitionableTestSlice(name, "untyped")
	delete(s.Spec.Devices[0].Attributes, TestPartitionTypeAttribute)
	s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(TestPartitionTypeAttribute))
	w.SubmitSlice(ctx, s)
	return nil
}

// publishPoolCompatibilityGroups publishes a complete pool: a counter set
// with room for all three devices, and the devices with their groups.
func (w *World) publishPoolCompatibilityGroups(ctx context.Context, pool string) error {
	return w.PublishTestPool(ctx, pool, 1,
		testDevice("left", "gpu-0", "a"), testDevice("right", "gpu-0", "b"), testDevice("both", "gpu-0", "a", "b"))
}

// claimTestDriverDevices asks for two of the test driver's devices by role,
// one request each.
func (w *World) claimTestDriverDevices(ctx context.Context, name, first, second string) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	role := func(r string) string {
		return fmt.Sprintf(`device.attributes[%s].?role.orValue("") == %s`, strconv.Quote(TestDriverName), strconv.Quote(r))
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		ExactRequest(first, class, 1, role(first)),
		ExactRequest(second, class, 1, role(second)),
	}}}
	return w.CreateClaim(ctx, NewClaim(name, spec))
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

func (w *World) claimAllocatedTestDevices(ctx context.Context, claim, first, second string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated, expected devices %s and %s of the test driver", claim, first, second)
	}
	got := DriverResults(c, TestDriverName)
	var names []string
	for _, r := range got {
		names = append(names, r.Device)
	}
	if len(got) != 2 || !((names[0] == first && names[1] == second) || (names[0] == second && names[1] == first)) {
		return fmt.Errorf("claim %s is allocated %s of the test driver, expected %s and %s", claim, ResultIDs(got), first, second)
	}
	return nil
}

func (w *World) claimTestDriverDevice(ctx context.Context, name string) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, NewClaim(name, ClaimSpec(class, 1)))
}

// podUnschedulableBecause waits for the scheduler to mark the pod
// unschedulable with a message that contains reason.
func (w *World) podUnschedulableBecause(ctx context.Context, name, reason string) (context.Context, error) {
	if err := w.waitUnschedulableBecause(ctx, name, reason); err != nil {
		return ctx, err
	}
	return w.proveUnschedulable(ctx, name)
}

func (w *World) waitUnschedulableBecause(ctx context.Context, name, reason string) error {
	return Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to be unschedulable because %q", name, reason), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod %s was scheduled to node %s, expected it to stay pending because %q (%s)", name, pod.Spec.NodeName, reason, DescribePod(pod))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, reason) {
				return true, "", nil
			}
		}
		return false, DescribePod(pod), nil
	})
}
