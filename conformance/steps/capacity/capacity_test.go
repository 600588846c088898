package capacity

import (
	"context"
	"fmt"
	"testing"

	"drakit.dev/drakit/conformance/kit"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// policyCases are the request policies the kit's KEP-5075 steps must
// understand, on a capacity of 10 units.
var policyCases = map[string]*resourceapi.CapacityRequestPolicy{
	"none":          nil,
	"range":         {Default: q(2), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(1), Step: q(1)}},
	"range step 2":  {Default: q(2), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(2), Step: q(2)}},
	"range max":     {Default: q(1), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(1), Max: q(4), Step: q(1)}},
	"range no step": {Default: q(4), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(4)}},
	"values":        {Default: q(2), ValidValues: []resource.Quantity{*q(2), *q(5), *q(8)}},
	"fractional":    {Default: qm(500), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: qm(500), Step: qm(250)}},
}

func q(v int64) *resource.Quantity  { return resource.NewQuantity(v, resource.DecimalSI) }
func qm(v int64) *resource.Quantity { return resource.NewMilliQuantity(v, resource.DecimalSI) }
func capacityOf(p *resourceapi.CapacityRequestPolicy) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: *q(10), RequestPolicy: p}
}

// TestCapacityPolicyMatchesUpstream: for every policy and a range of
// amounts (and no amount), what the kit expects a request to consume, and
// whether it fits at all, is what upstream's allocator records.
func TestCapacityPolicyMatchesUpstream(t *testing.T) {
	for name, rp := range policyCases {
		p, err := newCapacityPolicy("example.com/bw", capacityOf(rp))
		if err != nil {
			t.Fatal(err)
		}
		amounts := []int64{-1, 250, 500, 999, 1000, 1500, 2000, 3000, 4000, 4500, 6000, 8000, 9000, 10000, 11000}
		for _, a := range amounts {
			t.Run(fmt.Sprintf("%s/%dm", name, a), func(t *testing.T) {
				given := a >= 0
				want, wantOK := p.consumes(a, given)
				got, gotOK := upstreamConsumes(t, capacityOf(rp), a, given)
				if gotOK != wantOK || (gotOK && got != want) {
					t.Errorf("kit expects %dm (fits %t), upstream consumed %dm (fits %t)", want, wantOK, got, gotOK)
				}
			})
		}
	}
}

// upstreamConsumes allocates one claim for amount (none when !given) of a
// shared device with capacity c through upstream's allocator.
func upstreamConsumes(t *testing.T, c resourceapi.DeviceCapacity, amount int64, given bool) (int64, bool) {
	t.Helper()
	const driver = "nic.example.com"
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To("n"),
			Pool: resourceapi.ResourcePool{Name: "n", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "pf-0", AllowMultipleAllocations: ptr.To(true),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"example.com/bw": c}}},
		},
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "nic"}}
	req := kit.ExactRequest(kit.RequestName, "nic", 1)
	if given {
		req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"example.com/bw": quantity(amount)}}
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}}
	features := structured.Features{ConsumableCapacity: true, FractionalCapacityRange: true}
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, features, state, classLister{class}, []*resourceapi.ResourceSlice{slice}, cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, []*resourceapi.ResourceClaim{claim})
	if err != nil || len(res) == 0 {
		return 0, false
	}
	got := res[0].Devices.Results[0].ConsumedCapacity["example.com/bw"]
	return got.MilliValue(), true
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no class %s", name)
}

// TestCapacityPlans: the amounts the KEP-5075 scenarios ask for do what
// the scenarios say, for every policy.
func TestCapacityPlans(t *testing.T) {
	for name, rp := range policyCases {
		t.Run(name, func(t *testing.T) {
			p, err := newCapacityPolicy("example.com/bw", capacityOf(rp))
			if err != nil {
				t.Fatal(err)
			}
			if _, c := p.smallestShare(); 2*c > p.value {
				t.Errorf("two smallest shares consume %dm each, more than the capacity together", c)
			}
			big := p.largestShare()
			bigC, ok := p.consumes(big, true)
			if !ok || bigC != big {
				t.Errorf("largest share %dm consumes %dm (fits %t): not a valid amount", big, bigC, ok)
			}
			// A range whose maximum is below half the capacity has no
			// amount that exceeds what its largest share leaves.
			a, c, ok := p.exceeding(bigC)
			if wantOK := name != "range max"; ok != wantOK || (ok && bigC+c <= p.value) {
				t.Errorf("exceeding(%dm) = %dm consuming %dm (%t), want ok %t and more than the capacity together", bigC, a, c, ok, wantOK)
			}
			a, c, ok = p.betweenValid()
			if ok && (c == a || c < a) {
				t.Errorf("between valid %dm consumes %dm", a, c)
			}
			if wantRounding := rp != nil; ok != wantRounding {
				t.Errorf("betweenValid ok %t, want %t", ok, wantRounding)
			}
			if _, ok := p.consumes(p.overPolicy(), true); ok {
				t.Errorf("over the policy %dm fits", p.overPolicy())
			}
		})
	}
}
