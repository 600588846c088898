package differential

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

// bwAttr is the consumable capacity of the KEP-5075 cases.
const bwAttr = resourceapi.QualifiedName("example.com/bw")

// TestConsumableCapacityCases runs the KEP-5075 allocation rules (spec §7,
// behaviours 5 and 6) through both allocators: shared capacity, what is
// left after earlier claims, defaults, rounding up to a range's minimum or
// step or to the next valid value, requests above the policy, the full
// capacity without a policy, devices that are never shared. Each case
// states the verdict and, for a fit, the capacity each result consumes;
// upstream and the reference must both reach it, and their results must
// pass the checker.
func TestConsumableCapacityCases(t *testing.T) {
	q := func(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
	rangePolicy := func(def, min, step int64, max *resource.Quantity) *resourceapi.CapacityRequestPolicy {
		return &resourceapi.CapacityRequestPolicy{Default: q(def), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(min), Max: max, Step: q(step)}}
	}
	valuesPolicy := func(def int64, values ...int64) *resourceapi.CapacityRequestPolicy {
		p := &resourceapi.CapacityRequestPolicy{Default: q(def)}
		for _, v := range values {
			p.ValidValues = append(p.ValidValues, *q(v))
		}
		return p
	}
	for _, tc := range []struct {
		name string
		// policy of the shared device's 10 units of bandwidth; nil: none.
		policy *resourceapi.CapacityRequestPolicy
		// notShared publishes the device without allowMultipleAllocations.
		notShared bool
		// held is what earlier claims already consume of the device.
		held []int64
		// requests are the new claims' bandwidth requests, one claim
		// each; 0 asks for the device without an amount.
		requests []int64
		// consumed is the bandwidth each new claim's result records;
		// nil: no fit.
		consumed []int64
	}{
		{name: "claims share the device within its capacity", policy: rangePolicy(1, 1, 1, nil),
			requests: []int64{3, 3, 4}, consumed: []int64{3, 3, 4}},
		{name: "a claim exceeding what is left does not fit", policy: rangePolicy(1, 1, 1, nil),
			held: []int64{4, 4}, requests: []int64{3}},
		{name: "a claim within what is left fits", policy: rangePolicy(1, 1, 1, nil),
			held: []int64{4, 4}, requests: []int64{2}, consumed: []int64{2}},
		{name: "deallocation gives capacity back", policy: rangePolicy(1, 1, 1, nil),
			held: []int64{4}, requests: []int64{6}, consumed: []int64{6}},
		{name: "no amount gets the policy's default", policy: rangePolicy(2, 1, 1, nil),
			requests: []int64{0, 0}, consumed: []int64{2, 2}},
		{name: "no amount and no policy takes the whole device",
			requests: []int64{0}, consumed: []int64{10}},
		{name: "a device taken whole by one claim is not shared",
			requests: []int64{0, 0}},
		{name: "an amount off the step is rounded up to it", policy: rangePolicy(2, 2, 2, nil),
			requests: []int64{3, 5}, consumed: []int64{4, 6}},
		{name: "an amount below the minimum is rounded up to it", policy: rangePolicy(4, 4, 1, nil),
			requests: []int64{1}, consumed: []int64{4}},
		{name: "an amount above the range's maximum does not fit", policy: rangePolicy(1, 1, 1, q(4)),
			requests: []int64{5}},
		{name: "an amount is rounded up to the next valid value", policy: valuesPolicy(2, 2, 5, 10),
			requests: []int64{3, 1}, consumed: []int64{5, 2}},
		{name: "an amount above every valid value does not fit", policy: valuesPolicy(2, 2, 5),
			requests: []int64{6}},
		{name: "rounding counts against what is left", policy: rangePolicy(2, 2, 2, nil),
			held: []int64{6}, requests: []int64{3, 1}},
		{name: "a device without allowMultipleAllocations is never shared", notShared: true,
			requests: []int64{1, 1}},
		{name: "a device without allowMultipleAllocations goes to one claim", notShared: true,
			requests: []int64{1}, consumed: []int64{-1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := capacityScenario(tc.policy, tc.notShared, tc.held, tc.requests)
			problem, timedOut, kind := verdict(s)
			if problem != "" {
				t.Fatalf("allocators disagree or fail the checker: %s", problem)
			}
			if timedOut {
				t.Fatalf("upstream timed out on a one-device instance")
			}
			want := "fit"
			if tc.consumed == nil {
				want = "no fit"
			}
			if kind != want {
				t.Fatalf("verdict %s, want %s", kind, want)
			}
			if tc.consumed == nil {
				return
			}
			for _, alloc := range []struct {
				name string
				f    allocateFunc
			}{{"upstream", upstream}, {"reference", reference}} {
				out := run(s, alloc.f, *flagReference)
				if out.err != nil || len(out.results) != len(tc.requests) {
					t.Fatalf("%s: %d results, %v; want %d", alloc.name, len(out.results), out.err, len(tc.requests))
				}
				for i, res := range out.results {
					r := res.Devices.Results[0]
					if tc.consumed[i] < 0 {
						if r.ShareID != nil || r.ConsumedCapacity != nil {
							t.Errorf("%s: claim-%d on an unshared device got share %v, consumed %v", alloc.name, i, r.ShareID, r.ConsumedCapacity)
						}
						continue
					}
					got, ok := r.ConsumedCapacity[bwAttr]
					if r.ShareID == nil || !ok || got.Cmp(*q(tc.consumed[i])) != 0 {
						t.Errorf("%s: claim-%d consumes %s of %s (share %v), want %d", alloc.name, i, got.String(), bwAttr, r.ShareID, tc.consumed[i])
					}
				}
			}
		})
	}
}

// capacityScenario is one node with one NIC, nic-0, of 10 units of
// bandwidth (shared unless notShared, with policy), earlier claims holding
// held of it, and one claim per entry of requests.
func capacityScenario(policy *resourceapi.CapacityRequestPolicy, notShared bool, held, requests []int64) *scenario.Scenario {
	dev := resourceapi.Device{
		Name:     "nic-0",
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{bwAttr: {Value: *resource.NewQuantity(10, resource.DecimalSI), RequestPolicy: policy}},
	}
	if !notShared {
		dev.AllowMultipleAllocations = ptr.To(true)
	}
	s := &scenario.Scenario{
		APIVersion:    scenario.APIVersion,
		Kind:          scenario.Kind,
		Name:          "consumable capacity",
		Features:      scenario.Features{ConsumableCapacity: true, FractionalCapacityRange: true, DeviceBindingAndStatus: true},
		Node:          &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}},
		DeviceClasses: []*resourceapi.DeviceClass{class("nic", `device.driver == "`+nicDrv+`"`)},
		ResourceSlices: []*resourceapi.ResourceSlice{{
			ObjectMeta: metav1.ObjectMeta{Name: "nics"},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: nicDrv, NodeName: ptr.To(nodeName),
				Pool:    resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
				Devices: []resourceapi.Device{dev},
			},
		}},
	}
	for i, amount := range held {
		c := claimObj(fmt.Sprintf("held-%d", i), exact("nic", "nic", 1))
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "nic", Driver: nicDrv, Pool: nodeName, Device: dev.Name,
			ShareID:          ptr.To(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{bwAttr: *resource.NewQuantity(amount, resource.DecimalSI)},
		}}}}
		s.AllocatedClaims = append(s.AllocatedClaims, c)
	}
	for i, amount := range requests {
		req := exact("nic", "nic", 1)
		if amount > 0 {
			req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				bwAttr: *resource.NewQuantity(amount, resource.DecimalSI),
			}}
		}
		s.Claims = append(s.Claims, claimObj(fmt.Sprintf("claim-%d", i), req))
	}
	return s
}
