package nodealloc

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// nodeAllocSteps are KEP-5517's (dra-1.37-spec.md §13): devices whose
// capacity maps onto the Node's allocatable cpu and memory. The kit's own
// slices of the test driver for the API server's validation; with the
// driver, what the scheduler writes into pod.status and counts against
// node allocatable, and what the kubelet sets in the pod's cgroup. The
// steps that create pods asking for cpu need the node to themselves
// (needsExclusive): what other scenarios' pods request would change the
// node's free cpu under them.
func (w *world) nodeAllocSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with a device whose nodeAllocatableResources (.+) is submitted$`, Fn: w.submitNodeAllocSlice},
		{Pattern: `^the ResourceSlice "([^"]+)" stores the nodeAllocatableResources of its device$`, Fn: w.sliceStoresNodeAlloc},
		{Pattern: `^the driver publishes a device that maps a capacity onto node allocatable cpu$`, Fn: w.driverMapsCPU},
		{Pattern: `^a ResourceClaim "([^"]+)" consuming (\d+) of the capacity that maps onto cpu$`, Fn: w.claimMappedCPU},
		{Pattern: `^a pod "([^"]+)" requesting cpu "([^"]+)" is created with the claim "([^"]+)"$`, Fn: w.podRequestingCPUWithClaim, Needs: kit.NeedsExclusive},
		{Pattern: `^a pod "([^"]+)" requesting the node's free cpu is created with the claim "([^"]+)"$`, Fn: w.podFreeCPUWithClaim, Needs: kit.NeedsExclusive},
		{Pattern: `^a pod "([^"]+)" requesting the node's free cpu is created$`, Fn: w.podFreeCPU, Needs: kit.NeedsExclusive},
		{Pattern: `^pod "([^"]+)" stays pending as unschedulable with "([^"]+)"$`, Fn: w.podUnschedulableSaying},
		{Pattern: `^the status of pod "([^"]+)" maps the claim "([^"]+)" onto node allocatable as its allocation and the driver's slice say$`, Fn: w.podStatusMapsClaim},
		{Pattern: `^the cgroup of pod "([^"]+)" on the node has the cpu shares of its cpu request plus what its claims map onto cpu$`, Fn: w.podCgroupShares},
	}
}

// The defects of submitNodeAllocSlice (dra-1.37-spec.md §13 behaviors 1-3;
// pkg/apis/resource/validation validateNodeAllocatableResources).
var nodeAllocDefects = map[string]func(*resourceapi.Device){
	"map an extended resource": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{"example.com/widgets": cpuMapping("cpu", "1")}
	},
	"set neither mapping nor overhead": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{corev1.ResourceCPU: {}}
	},
	"map a capacity key the device lacks": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{corev1.ResourceCPU: cpuMapping("cores", "1")}
	},
	"map with a zero capacity multiplier": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{corev1.ResourceCPU: cpuMapping("cpu", "0")}
	},
	"map with a negative device multiplier": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{corev1.ResourceCPU: {
			Mapping: &resourceapi.NodeAllocatableMapping{DeviceMultiplier: ptr.To(resource.MustParse("-1"))},
		}}
	},
	"set a negative perPod overhead": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{corev1.ResourceMemory: {
			Overhead: &resourceapi.NodeAllocatableOverhead{PerPod: ptr.To(resource.MustParse("-1Mi"))},
		}}
	},
	"map cpu and memory": func(d *resourceapi.Device) {
		d.NodeAllocatableResources = map[corev1.ResourceName]resourceapi.NodeAllocatableResource{
			corev1.ResourceCPU: cpuMapping("cpu", "1"),
			corev1.ResourceMemory: {
				Mapping:  &resourceapi.NodeAllocatableMapping{CapacityKey: ptr.To(resourceapi.QualifiedName("memory")), CapacityMultiplier: ptr.To(resource.MustParse("1"))},
				Overhead: &resourceapi.NodeAllocatableOverhead{PerPod: ptr.To(resource.MustParse("16Mi"))},
			},
		}
	},
}

func cpuMapping(key, multiplier string) resourceapi.NodeAllocatableResource {
	return resourceapi.NodeAllocatableResource{Mapping: &resourceapi.NodeAllocatableMapping{
		CapacityKey: ptr.To(resourceapi.QualifiedName(key)), CapacityMultiplier: ptr.To(resource.MustParse(multiplier)),
	}}
}

// submitNodeAllocSlice submits a one-device slice of the test driver,
// with capacity cpu (4) and memory (8Gi), whose nodeAllocatableResources
// has the defect (or is valid: "map cpu and memory").
func (w *world) submitNodeAllocSlice(ctx context.Context, name, defect string) error {
	apply, ok := nodeAllocDefects[defect]
	if !ok {
		known := make([]string, 0, len(nodeAllocDefects))
		for k := range nodeAllocDefects {
			known = append(known, k)
		}
		sort.Strings(known)
		return fmt.Errorf("unknown nodeAllocatableResources case %q (known: %s)", defect, strings.Join(known, "; "))
	}
	s := w.TestSlice(name, name, 1)
	d := resourceapi.Device{Name: "dev-0", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"cpu":    {Value: resource.MustParse("4")},
		"memory": {Value: resource.MustParse("8Gi")},
	}}
	apply(&d)
	s.Spec.Devices = []resourceapi.Device{d}
	w.SubmitSlice(ctx, s)
	return nil
}

// sliceStoresNodeAlloc checks that the API server kept the submitted
// device's nodeAllocatableResources as sent: with DRANodeAllocatableResources
// off it drops the field (resourceslice strategy), silently.
func (w *world) sliceStoresNodeAlloc(ctx context.Context, name string) error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	if s.Err != nil {
		return fmt.Errorf("ResourceSlice %s was rejected: %v", name, s.Err)
	}
	got, err := w.Kube.ResourceV1().ResourceSlices().Get(ctx, w.TestObjectName(name), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ResourceSlice %s: %w", name, err)
	}
	want := resourceapi.Device{}
	nodeAllocDefects["map cpu and memory"](&want)
	if len(got.Spec.Devices) != 1 {
		return fmt.Errorf("ResourceSlice %s: stored %d devices, sent 1", name, len(got.Spec.Devices))
	}
	stored := got.Spec.Devices[0].NodeAllocatableResources
	if len(stored) == 0 {
		return fmt.Errorf("ResourceSlice %s: the API server dropped the device's nodeAllocatableResources (feature gate DRANodeAllocatableResources off?)", name)
	}
	if !apiequality.Semantic.DeepEqual(stored, want.NodeAllocatableResources) {
		return fmt.Errorf("ResourceSlice %s: stored nodeAllocatableResources %s, sent %s", name, formatNodeAlloc(stored), formatNodeAlloc(want.NodeAllocatableResources))
	}
	return nil
}

func formatNodeAlloc(m map[corev1.ResourceName]resourceapi.NodeAllocatableResource) string {
	var parts []string
	for name, r := range m {
		p := string(name) + ":"
		if mp := r.Mapping; mp != nil {
			p += fmt.Sprintf(" mapping{capacityKey %s, capacityMultiplier %s, deviceMultiplier %s}",
				ptrString(mp.CapacityKey), quantityString(mp.CapacityMultiplier), quantityString(mp.DeviceMultiplier))
		}
		if o := r.Overhead; o != nil {
			p += fmt.Sprintf(" overhead{perPod %s, perContainer %s}", quantityString(o.PerPod), quantityString(o.PerContainer))
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, "; ") + "}"
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return "-"
	}
	return string(*p)
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}
