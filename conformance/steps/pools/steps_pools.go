package pools

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

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// poolSteps publish resource pools of a test driver that only the kit
// writes: they check what the API server and the scheduler do with pools
// that are malformed (KEP-4815 validation and invalid pools), independent of
// the driver under test. The test driver has no kubelet plugin, so no pod
// that gets one of its devices can start unless its slice skips node
// operations (KEP-5945, steps_nodeops.go); these steps only ever expect such
// pods to stay pending.
func (w *world) poolSteps() []kit.StepDef {
	return []kit.StepDef{
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

func (w *world) submitSliceWithDevicesAndCounters(ctx context.Context, name string) error {
	s := w.TestSlice(name, name, 1)
	s.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: kit.TestCounters(1 << 30)}}
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
func (w *world) publishInvalidPool(ctx context.Context, pool, defect string) error {
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

// testDevice is a device of the test driver named and with role name that
// draws a quarter of counter set set's memory, in the given compatibility
// groups, with partition type "quarter".
func testDevice(name, set string, groups ...string) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			kit.TestRoleAttribute:          {StringValue: ptr.To(name)},
			kit.TestPartitionTypeAttribute: {StringValue: ptr.To("quarter")},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: kit.TestCounters(1 << 28), CompatibilityGroups: groups}},
	}
}

// partitionableTestSlice is a valid one-slice pool of counter-consuming
// test devices, by role (the counter set lives in no slice: slice validation
// does not look across slices).
func (w *world) partitionableTestSlice(name string, roles ...string) *resourceapi.ResourceSlice {
	s := w.TestSlice(name, name, 1)
	for _, role := range roles {
		s.Spec.Devices = append(s.Spec.Devices, testDevice(role, "gpu-0"))
	}
	return s
}

// apiServerKeepsSliceField skips the scenario when the API server drops an
// alpha field of ResourceSlices (its feature gate is off): a dry-run create
// of a valid slice that sets it shows whether it is stored.
func (w *world) apiServerKeepsSliceField(ctx context.Context, field string) (context.Context, error) {
	s := w.partitionableTestSlice("gate-check", "left")
	gate := ""
	switch field {
	case "partitionTypeAttribute":
		s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(kit.TestPartitionTypeAttribute))
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
		return kit.Skip(ctx, fmt.Sprintf("%sneeds feature gate %s: the API server drops ResourceSlice %s", report.NotEligiblePrefix, gate, field))
	}
	return ctx, nil
}

func (w *world) submitSlicePartitionTypeWithoutCounters(ctx context.Context, name string) error {
	s := w.partitionableTestSlice(name, "plain")
	s.Spec.Devices[0].ConsumesCounters = nil
	s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(kit.TestPartitionTypeAttribute))
	w.SubmitSlice(ctx, s)
	return nil
}

func (w *world) submitSlicePartitionTypeMissing(ctx context.Context, name string) error {
	s := w.partitionableTestSlice(name, "untyped")
	delete(s.Spec.Devices[0].Attributes, kit.TestPartitionTypeAttribute)
	s.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(kit.TestPartitionTypeAttribute))
	w.SubmitSlice(ctx, s)
	return nil
}

// publishPoolCompatibilityGroups publishes a complete pool: a counter set
// with room for all three devices, and the devices with their groups.
func (w *world) publishPoolCompatibilityGroups(ctx context.Context, pool string) error {
	return w.PublishTestPool(ctx, pool, 1,
		testDevice("left", "gpu-0", "a"), testDevice("right", "gpu-0", "b"), testDevice("both", "gpu-0", "a", "b"))
}

// claimTestDriverDevices asks for two of the test driver's devices by role,
// one request each.
func (w *world) claimTestDriverDevices(ctx context.Context, name, first, second string) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	role := func(r string) string {
		return fmt.Sprintf(`device.attributes[%s].?role.orValue("") == %s`, strconv.Quote(kit.TestDriverName), strconv.Quote(r))
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		kit.ExactRequest(first, class, 1, role(first)),
		kit.ExactRequest(second, class, 1, role(second)),
	}}}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

func (w *world) claimAllocatedTestDevices(ctx context.Context, claim, first, second string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated, expected devices %s and %s of the test driver", claim, first, second)
	}
	got := kit.DriverResults(c, kit.TestDriverName)
	var names []string
	for _, r := range got {
		names = append(names, r.Device)
	}
	if len(got) != 2 || !((names[0] == first && names[1] == second) || (names[0] == second && names[1] == first)) {
		return fmt.Errorf("claim %s is allocated %s of the test driver, expected %s and %s", claim, kit.ResultIDs(got), first, second)
	}
	return nil
}

func (w *world) claimTestDriverDevice(ctx context.Context, name string) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(class, 1)))
}

// podUnschedulableBecause waits for the scheduler to mark the pod
// unschedulable with a message that contains reason.
func (w *world) podUnschedulableBecause(ctx context.Context, name, reason string) (context.Context, error) {
	if err := w.waitUnschedulableBecause(ctx, name, reason); err != nil {
		return ctx, err
	}
	return w.ProveUnschedulable(ctx, name)
}

func (w *world) waitUnschedulableBecause(ctx context.Context, name, reason string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to be unschedulable because %q", name, reason), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod %s was scheduled to node %s, expected it to stay pending because %q (%s)", name, pod.Spec.NodeName, reason, kit.DescribePod(pod))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, reason) {
				return true, "", nil
			}
		}
		return false, kit.DescribePod(pod), nil
	})
}
