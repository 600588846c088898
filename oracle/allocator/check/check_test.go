package check

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

const (
	drv  = "gpu.example.com"
	node = "node-1"
)

// gpu is a device with a NUMA node attribute and 80Gi of memory.
func gpu(name string, numa int64) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"numa":  {IntValue: ptr.To(numa)},
			"model": {StringValue: ptr.To("h100")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi")},
		},
	}
}

func slice(name, pool string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   drv,
			Pool:     resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

func exact(name string, count int64, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
	}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return r
}

func claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
}

func res(request, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: drv, Pool: node, Device: device}
}

func localSelector() *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
}

func alloc(results ...resourceapi.DeviceRequestAllocationResult) resourceapi.AllocationResult {
	return resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}, NodeSelector: localSelector()}
}

// baseInput: one pool on node-1 with gpu-0..gpu-3 (NUMA 0, 0, 1, 1), class
// "gpu" selecting the driver, one claim asking for one GPU.
func baseInput() Input {
	return Input{
		Features: structured.Features{
			AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true,
			ConsumableCapacity: true, DeviceBindingAndStatus: true, ListTypeAttributes: true,
		},
		Classes: []*resourceapi.DeviceClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + drv + `"`},
			}}},
		}},
		Slices: []*resourceapi.ResourceSlice{slice("s1", node, gpu("gpu-0", 0), gpu("gpu-1", 0), gpu("gpu-2", 1), gpu("gpu-3", 1))},
		Node:   &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"zone": "a"}}},
		Claims: []*resourceapi.ResourceClaim{claim("c0", exact("r", 1))},
	}
}

func shareID(n int) *types.UID {
	return ptr.To(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)))
}

// sharedSlice makes gpu-0 shareable with a 10-unit "bw" capacity whose
// policy rounds requests up to multiples of 2 (default 2).
func sharedSlice(in *Input) {
	d := &in.Slices[0].Spec.Devices[0]
	d.AllowMultipleAllocations = ptr.To(true)
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bw": {
		Value: resource.MustParse("10"),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    ptr.To(resource.MustParse("2")),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("2")), Step: ptr.To(resource.MustParse("2"))},
		},
	}}
}

func shared(request string, id int, bw string) resourceapi.DeviceRequestAllocationResult {
	r := res(request, "gpu-0")
	r.ShareID = shareID(id)
	r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"bw": resource.MustParse(bw)}
	return r
}

func withCapacity(r resourceapi.DeviceRequest, bw string) resourceapi.DeviceRequest {
	r.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"bw": resource.MustParse(bw)}}
	return r
}

// counterPool puts gpu-0..gpu-3 into a partitioned pool: each consumes 4 of
// the 8 "mem" units of counter set "phys".
func counterPool(in *Input) {
	for i := range in.Slices[0].Spec.Devices {
		in.Slices[0].Spec.Devices[i].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{
			CounterSet: "phys", Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse("4")}},
		}}
	}
	in.Slices[0].Spec.Pool.ResourceSliceCount = 2
	counters := slice("s0", node)
	counters.Spec.Pool.ResourceSliceCount = 2
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "phys", Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse("8")}}}}
	in.Slices = append(in.Slices, counters)
}

func TestCheck(t *testing.T) {
	numa := resourceapi.FullyQualifiedName(drv + "/numa")
	firstAvailable := resourceapi.DeviceRequest{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "two", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		{Name: "one", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}
	allRequest := resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeAll}}
	tests := []struct {
		name    string
		modify  func(*Input)
		results []resourceapi.AllocationResult
		want    []Rule
	}{
		{name: "valid: one device", results: []resourceapi.AllocationResult{alloc(res("r", "gpu-1"))}},
		{name: "valid: nil results mean no allocation", results: nil},
		{
			name:    "valid: All takes every device",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", allRequest) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"), res("r", "gpu-2"), res("r", "gpu-3"))},
		},
		{
			name: "valid: All skips devices in use",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", allRequest)
				in.AllocatedState.AllocatedDevices = sets.New(structured.MakeDeviceID(drv, node, "gpu-3"))
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"), res("r", "gpu-2"))},
		},
		{
			name:    "valid: firstAvailable second subrequest",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", firstAvailable) },
			results: []resourceapi.AllocationResult{alloc(res("r/one", "gpu-2"))},
		},
		{
			name: "valid: matchAttribute",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", exact("r", 2))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-2"), res("r", "gpu-3"))},
		},
		{
			name: "valid: matchAttribute on list attributes with a common value",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Attributes["numa"] = resourceapi.DeviceAttribute{IntValues: []int64{0, 1}}
				in.Claims[0] = claim("c0", exact("r", 2))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-3"))},
		},
		{
			name: "valid: distinctAttribute",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", exact("a", 1), exact("b", 1))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("a", "gpu-0"), res("b", "gpu-2"))},
		},
		{
			name: "valid: admin access to a device in use",
			modify: func(in *Input) {
				in.Claims[0].Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
				in.AllocatedState.AllocatedDevices = sets.New(structured.MakeDeviceID(drv, node, "gpu-0"))
			},
			results: []resourceapi.AllocationResult{alloc(func() resourceapi.DeviceRequestAllocationResult {
				r := res("r", "gpu-0")
				r.AdminAccess = ptr.To(true)
				return r
			}())},
		},
		{
			name: "valid: shared device, two claims, capacity rounded by policy",
			modify: func(in *Input) {
				sharedSlice(in)
				in.Claims = []*resourceapi.ResourceClaim{claim("c0", withCapacity(exact("r", 1), "3")), claim("c1", exact("r", 1, `device.allowMultipleAllocations == true`))}
			},
			results: []resourceapi.AllocationResult{alloc(shared("r", 1, "4")), alloc(shared("r", 2, "2"))},
		},
		{
			name:    "valid: counters within the counter set",
			modify:  func(in *Input) { counterPool(in); in.Claims[0] = claim("c0", exact("r", 2)) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-3"))},
		},
		{
			name: "valid: tolerated taint",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "broken", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
				in.Claims[0].Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "broken", Operator: resourceapi.DeviceTolerationOpExists}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
		},
		{
			name:    "valid: allNodes devices need no node selector",
			modify:  func(in *Input) { in.Slices[0].Spec.NodeName = nil; in.Slices[0].Spec.AllNodes = ptr.To(true) },
			results: []resourceapi.AllocationResult{{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{res("r", "gpu-0")}}}},
		},

		// Invalid results, one or more per rule.
		{
			name: "more than 32 results",
			modify: func(in *Input) {
				var devs []resourceapi.Device
				for i := range 33 {
					devs = append(devs, gpu(fmt.Sprintf("gpu-%d", i), 0))
				}
				in.Slices[0].Spec.Devices = devs
				in.Claims[0] = claim("c0", exact("r", 33))
			},
			results: func() []resourceapi.AllocationResult {
				var rs []resourceapi.DeviceRequestAllocationResult
				for i := range 33 {
					rs = append(rs, res("r", fmt.Sprintf("gpu-%d", i)))
				}
				return []resourceapi.AllocationResult{alloc(rs...)}
			}(),
			want: []Rule{RuleMaxResults},
		},
		{name: "unknown device", results: []resourceapi.AllocationResult{alloc(res("r", "gpu-9"))}, want: []Rule{RuleCount, RuleDevice}},
		{
			name:    "unknown driver",
			results: []resourceapi.AllocationResult{alloc(resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: "nic.example.com", Pool: node, Device: "gpu-0"})},
			want:    []Rule{RuleCount, RuleDevice},
		},
		{
			name:    "incomplete pool",
			modify:  func(in *Input) { in.Slices[0].Spec.Pool.ResourceSliceCount = 2 },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCount, RuleDevice},
		},
		{
			name: "device only in a stale generation",
			modify: func(in *Input) {
				newer := slice("s2", node, gpu("gpu-0", 0))
				newer.Spec.Pool.Generation = 2
				in.Slices = append(in.Slices, newer)
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-1"))},
			want:    []Rule{RuleCount, RuleDevice},
		},
		{
			name: "duplicate device names make the pool invalid",
			modify: func(in *Input) {
				in.Slices[0].Spec.Pool.ResourceSliceCount = 2
				second := slice("s2", node, gpu("gpu-0", 1))
				second.Spec.Pool.ResourceSliceCount = 2
				in.Slices = append(in.Slices, second)
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-1"))},
			want:    []Rule{RuleCount, RuleDevice},
		},
		{
			name: "missing counter set makes the pool invalid",
			modify: func(in *Input) {
				counterPool(in)
				in.Slices[0].Spec.Devices[1].ConsumesCounters[0].CounterSet = "other"
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCount, RuleDevice},
		},
		{
			name:    "slice of another node",
			modify:  func(in *Input) { in.Slices[0].Spec.NodeName = ptr.To("node-2") },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCount, RuleNodeAccess},
		},
		{
			name: "slice node selector does not select the node",
			modify: func(in *Input) {
				in.Slices[0].Spec.NodeName = nil
				in.Slices[0].Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}},
				}}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCount, RuleNodeAccess},
		},
		{
			name: "per-device node selection: device of another node",
			modify: func(in *Input) {
				in.Slices[0].Spec.NodeName = nil
				in.Slices[0].Spec.PerDeviceNodeSelection = ptr.To(true)
				for i := range in.Slices[0].Spec.Devices {
					in.Slices[0].Spec.Devices[i].NodeName = ptr.To(node)
				}
				in.Slices[0].Spec.Devices[2].NodeName = ptr.To("node-2")
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-2"))},
			want:    []Rule{RuleNodeAccess},
		},
		{name: "unknown request", results: []resourceapi.AllocationResult{alloc(res("x", "gpu-0"))}, want: []Rule{RuleCount, RuleRequestName}},
		{name: "subrequest of an exact request", results: []resourceapi.AllocationResult{alloc(res("r/one", "gpu-0"))}, want: []Rule{RuleCount, RuleRequestName}},
		{
			name:    "firstAvailable result without subrequest",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", firstAvailable) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCount, RuleRequestName},
		},
		{
			name:    "firstAvailable mixing subrequests",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", firstAvailable) },
			results: []resourceapi.AllocationResult{alloc(res("r/one", "gpu-0"), res("r/two", "gpu-1"))},
			want:    []Rule{RuleRequestName},
		},
		{
			name:    "firstAvailable subrequest count not met",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", firstAvailable) },
			results: []resourceapi.AllocationResult{alloc(res("r/two", "gpu-0"))},
			want:    []Rule{RuleCount},
		},
		{name: "too many devices for count", results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"))}, want: []Rule{RuleCount}},
		{
			name:    "All misses an available device",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", allRequest) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"), res("r", "gpu-2"))},
			want:    []Rule{RuleAll},
		},
		{
			name: "All with a matching device in an incomplete pool",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", allRequest)
				other := slice("s9", "other", gpu("gpu-9", 0))
				other.Spec.Pool.ResourceSliceCount = 2
				in.Slices = append(in.Slices, other)
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"), res("r", "gpu-2"), res("r", "gpu-3"))},
			want:    []Rule{RuleAll},
		},
		{
			name: "class selector fails",
			modify: func(in *Input) {
				in.Classes[0].Spec.Selectors[0].CEL.Expression = `device.attributes["` + drv + `"].numa == 1`
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleClass},
		},
		{
			name:    "class missing",
			modify:  func(in *Input) { in.Classes = nil },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleClass},
		},
		{
			name:    "request selector fails",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", exact("r", 1, `device.attributes["`+drv+`"].numa == 1`)) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleSelector},
		},
		{
			name:    "request selector CEL runtime error",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", exact("r", 1, `device.attributes["`+drv+`"].nosuch == 1`)) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleSelector},
		},
		{
			name: "matchAttribute differs",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", exact("r", 2))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-1"), res("r", "gpu-2"))},
			want:    []Rule{RuleMatchAttribute},
		},
		{
			name: "matchAttribute on list attributes without a common value",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Attributes["numa"] = resourceapi.DeviceAttribute{IntValues: []int64{2, 3}}
				in.Claims[0] = claim("c0", exact("r", 2))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"))},
			want:    []Rule{RuleMatchAttribute},
		},
		{
			name: "matchAttribute on a missing attribute",
			modify: func(in *Input) {
				delete(in.Slices[0].Spec.Devices[1].Attributes, "numa")
				in.Claims[0] = claim("c0", exact("a", 1), exact("b", 1))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{Requests: []string{"a", "b"}, MatchAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("a", "gpu-0"), res("b", "gpu-1"))},
			want:    []Rule{RuleMatchAttribute},
		},
		{
			name: "distinctAttribute repeats a value",
			modify: func(in *Input) {
				in.Claims[0] = claim("c0", exact("r", 2))
				in.Claims[0].Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &numa}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-2"), res("r", "gpu-3"))},
			want:    []Rule{RuleDistinctAttribute},
		},
		{
			name:    "device used by two claims",
			modify:  func(in *Input) { in.Claims = append(in.Claims, claim("c1", exact("r", 1))) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0")), alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleInUse},
		},
		{
			name:    "device used twice in one claim",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", exact("a", 1), exact("b", 1)) },
			results: []resourceapi.AllocationResult{alloc(res("a", "gpu-0"), res("b", "gpu-0"))},
			want:    []Rule{RuleInUse},
		},
		{
			name: "device already allocated",
			modify: func(in *Input) {
				in.AllocatedState.AllocatedDevices = sets.New(structured.MakeDeviceID(drv, node, "gpu-0"))
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleInUse},
		},
		{
			name: "shared device over capacity",
			modify: func(in *Input) {
				sharedSlice(in)
				in.Claims = []*resourceapi.ResourceClaim{claim("c0", withCapacity(exact("r", 1), "6")), claim("c1", withCapacity(exact("r", 1), "6"))}
			},
			results: []resourceapi.AllocationResult{alloc(shared("r", 1, "6")), alloc(shared("r", 2, "6"))},
			want:    []Rule{RuleCapacity},
		},
		{
			name: "shared device over capacity with the allocated state",
			modify: func(in *Input) {
				sharedSlice(in)
				in.AllocatedState.AggregatedCapacity = structured.ConsumedCapacityCollection{
					structured.MakeDeviceID(drv, node, "gpu-0"): {"bw": ptr.To(resource.MustParse("8"))},
				}
				in.Claims[0] = claim("c0", withCapacity(exact("r", 1), "4"))
			},
			results: []resourceapi.AllocationResult{alloc(shared("r", 1, "4"))},
			want:    []Rule{RuleCapacity},
		},
		{
			name: "consumed capacity not what the policy gives",
			modify: func(in *Input) {
				sharedSlice(in)
				in.Claims[0] = claim("c0", withCapacity(exact("r", 1), "3"))
			},
			results: []resourceapi.AllocationResult{alloc(shared("r", 1, "3"))},
			want:    []Rule{RuleCapacity},
		},
		{
			name:    "capacity request larger than the device",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", withCapacity(exact("r", 1), "100Gi")) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleCapacity},
		},
		{
			name: "shared device without shareID",
			modify: func(in *Input) {
				sharedSlice(in)
			},
			results: []resourceapi.AllocationResult{alloc(func() resourceapi.DeviceRequestAllocationResult {
				r := shared("r", 1, "2")
				r.ShareID = nil
				return r
			}())},
			want: []Rule{RuleShareID},
		},
		{
			name: "shareID used twice",
			modify: func(in *Input) {
				sharedSlice(in)
				in.Claims = append(in.Claims, claim("c1", exact("r", 1)))
			},
			results: []resourceapi.AllocationResult{alloc(shared("r", 1, "2")), alloc(shared("r", 1, "2"))},
			want:    []Rule{RuleShareID},
		},
		{
			name: "shareID on an exclusive device",
			results: []resourceapi.AllocationResult{alloc(func() resourceapi.DeviceRequestAllocationResult {
				r := res("r", "gpu-0")
				r.ShareID = shareID(1)
				return r
			}())},
			want: []Rule{RuleShareID},
		},
		{
			name:    "counters exceeded",
			modify:  func(in *Input) { counterPool(in); in.Claims[0] = claim("c0", exact("r", 3)) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"), res("r", "gpu-1"), res("r", "gpu-2"))},
			want:    []Rule{RuleCounters},
		},
		{
			name: "counters exceeded with the allocated state",
			modify: func(in *Input) {
				counterPool(in)
				in.AllocatedState.AllocatedDevices = sets.New(structured.MakeDeviceID(drv, node, "gpu-0"), structured.MakeDeviceID(drv, node, "gpu-1"))
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-2"))},
			want:    []Rule{RuleCounters},
		},
		{
			name: "untolerated taint",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoExecute}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleTaint},
		},
		{
			name: "toleration for another value",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "broken", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
				in.Claims[0].Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "broken", Operator: resourceapi.DeviceTolerationOpEqual, Value: "no"}}
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleTaint},
		},
		{
			name: "adminAccess without admin request",
			results: []resourceapi.AllocationResult{alloc(func() resourceapi.DeviceRequestAllocationResult {
				r := res("r", "gpu-0")
				r.AdminAccess = ptr.To(true)
				return r
			}())},
			want: []Rule{RuleAdminAccess},
		},
		{
			name:    "admin request without adminAccess in the result",
			modify:  func(in *Input) { in.Claims[0].Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true) },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleAdminAccess},
		},
		{
			name:    "no node selector for node-local devices",
			results: []resourceapi.AllocationResult{{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{res("r", "gpu-0")}}}},
			want:    []Rule{RuleNodeSelector},
		},
		{
			name: "node selector for another node",
			results: []resourceapi.AllocationResult{func() resourceapi.AllocationResult {
				a := alloc(res("r", "gpu-0"))
				a.NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values = []string{"node-2"}
				return a
			}()},
			want: []Rule{RuleNodeSelector},
		},
		{
			name:    "counters without PartitionableDevices",
			modify:  func(in *Input) { counterPool(in); in.Features.PartitionableDevices = false },
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
			want:    []Rule{RuleFeature},
		},
		{
			name:    "firstAvailable without PrioritizedList",
			modify:  func(in *Input) { in.Claims[0] = claim("c0", firstAvailable); in.Features.PrioritizedList = false },
			results: []resourceapi.AllocationResult{alloc(res("r/one", "gpu-0"))},
			want:    []Rule{RuleFeature},
		},
		{
			name: "taints ignored without DeviceTaints",
			modify: func(in *Input) {
				in.Slices[0].Spec.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoExecute}}
				in.Features.DeviceTaints = false
			},
			results: []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			if tc.modify != nil {
				tc.modify(&in)
			}
			err := Check(context.Background(), in, tc.results)
			var got []Rule
			for _, v := range Violations(err) {
				if !slices.Contains(got, v.Rule) {
					got = append(got, v.Rule)
				}
				if v.Claim == "" || v.Detail == "" {
					t.Errorf("violation without claim or detail: %v", v)
				}
			}
			slices.Sort(got)
			slices.Sort(tc.want)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s\nerror: %v", diff, err)
			}
			for _, rule := range tc.want {
				if !errors.Is(err, rule) {
					t.Errorf("errors.Is(err, %s) = false", rule)
				}
			}
		})
	}
}

func TestCheckInvalidInput(t *testing.T) {
	tests := map[string]func(*Input) []resourceapi.AllocationResult{
		"fewer results than claims": func(in *Input) []resourceapi.AllocationResult {
			in.Claims = append(in.Claims, claim("c1", exact("r", 1)))
			return []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))}
		},
		"nil node": func(in *Input) []resourceapi.AllocationResult {
			in.Node = nil
			return []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))}
		},
		"nil claim": func(in *Input) []resourceapi.AllocationResult {
			in.Claims[0] = nil
			return []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))}
		},
		"nil slice": func(in *Input) []resourceapi.AllocationResult {
			in.Slices = append(in.Slices, nil)
			return []resourceapi.AllocationResult{alloc(res("r", "gpu-0"))}
		},
	}
	for name, modify := range tests {
		t.Run(name, func(t *testing.T) {
			in := baseInput()
			results := modify(&in)
			if err := Check(context.Background(), in, results); !errors.Is(err, ErrInvalidInput) {
				t.Errorf("got %v, want ErrInvalidInput", err)
			}
		})
	}
}

// TestCheckDoesNotModifyInput: the checker must leave its input alone
// (Quantity.AsDec and friends convert in place).
func TestCheckDoesNotModifyInput(t *testing.T) {
	in := baseInput()
	sharedSlice(&in)
	in.Slices[0].Spec.Devices[0].Capacity["bw"].RequestPolicy.ValidRange.Step = ptr.To(resource.MustParse("500m"))
	in.Features.FractionalCapacityRange = true
	in.Claims[0] = claim("c0", withCapacity(exact("r", 1), "2.2"))
	before := in.Slices[0].DeepCopy()
	_ = Check(context.Background(), in, []resourceapi.AllocationResult{alloc(shared("r", 1, "2.5"))})
	// reflect.DeepEqual, not cmp: Quantity.Equal would hide a changed
	// internal representation.
	if !reflect.DeepEqual(before, in.Slices[0]) {
		t.Errorf("slice modified:\nbefore %#v\nafter  %#v", before.Spec.Devices[0].Capacity, in.Slices[0].Spec.Devices[0].Capacity)
	}
}
