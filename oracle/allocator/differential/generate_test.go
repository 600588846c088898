package differential

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

const (
	nodeName = "node-1"
	gpuDrv   = "gpu.example.com"
	nicDrv   = "nic.example.com"
	// Attributes shared by all drivers, so constraints can span drivers.
	numaAttr  = "example.com/numa"
	modelAttr = "example.com/model"
)

var drivers = []string{gpuDrv, nicDrv}

// gen builds one random scenario from a seed.
type gen struct {
	r *rand.Rand
}

func (g *gen) chance(p float64) bool  { return g.r.Float64() < p }
func (g *gen) intn(n int) int         { return g.r.IntN(n) }
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// generate returns a small random scenario; the same seed gives the same
// scenario.
func generate(seed uint64) *scenario.Scenario {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s := &scenario.Scenario{
		APIVersion: scenario.APIVersion,
		Kind:       scenario.Kind,
		Name:       fmt.Sprintf("differential seed %d", seed),
		Features: scenario.Features{
			AdminAccess:          true,
			PrioritizedList:      true,
			PartitionableDevices: g.chance(0.8),
			DeviceTaints:         g.chance(0.8),
			ConsumableCapacity:   g.chance(0.6),
		},
		Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"zone": "a"}}},
	}
	if s.Features.ConsumableCapacity {
		s.Features.DeviceBindingAndStatus = true
		s.Features.FractionalCapacityRange = true
	}
	s.DeviceClasses = []*resourceapi.DeviceClass{
		class("gpu", `device.driver == "`+gpuDrv+`"`),
		class("nic", `device.driver == "`+nicDrv+`"`),
		class("any", `true`),
	}
	var devices []resourceapi.DeviceRequestAllocationResult // every generated device, for allocated claims
	numPools := g.between(1, 3)
	for p := range numPools {
		driver := drivers[g.intn(len(drivers))]
		slices, devs := g.pool(s.Features, driver, fmt.Sprintf("pool-%d", p))
		s.ResourceSlices = append(s.ResourceSlices, slices...)
		devices = append(devices, devs...)
	}
	shared := map[string]bool{} // pool/device of devices with allowMultipleAllocations
	for _, sl := range s.ResourceSlices {
		for _, d := range sl.Spec.Devices {
			if ptr.Deref(d.AllowMultipleAllocations, false) {
				shared[sl.Spec.Pool.Name+"/"+d.Name] = true
			}
		}
	}
	// Devices already in use; a shared one by a share of its capacity.
	if len(devices) > 0 && g.chance(0.3) {
		used := devices[g.intn(len(devices))]
		used.Request = "old"
		if shared[used.Pool+"/"+used.Device] && g.chance(0.8) {
			used.ShareID = ptr.To(types.UID("00000000-0000-4000-8000-000000000001"))
			used.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
				"example.com/bw":     *resource.NewQuantity(int64(g.between(1, 4)), resource.DecimalSI),
				"example.com/memory": *resource.NewQuantity(0, resource.DecimalSI),
			}
		}
		c := claimObj("allocated-0", exact("old", "any", 1))
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{used}}}
		s.AllocatedClaims = append(s.AllocatedClaims, c)
	}
	numClaims := g.between(1, 3)
	for i := range numClaims {
		s.Claims = append(s.Claims, g.claim(s.Features, fmt.Sprintf("claim-%d", i)))
	}
	return s
}

func class(name, expr string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}},
	}
}

// pool generates the slices of one pool and its devices as result stubs.
func (g *gen) pool(f scenario.Features, driver, name string) ([]*resourceapi.ResourceSlice, []resourceapi.DeviceRequestAllocationResult) {
	numSlices := g.between(1, 2)
	partitioned := f.PartitionableDevices && g.chance(0.35)
	var counterValue int64
	if partitioned {
		counterValue = int64(g.between(2, 8))
	}
	total := int64(numSlices)
	if partitioned {
		total++
	}
	incomplete := g.chance(0.05)
	if incomplete {
		total++
	}
	spec := func() resourceapi.ResourceSliceSpec {
		sp := resourceapi.ResourceSliceSpec{
			Driver: driver,
			Pool:   resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: total},
		}
		switch x := g.r.Float64(); {
		case x < 0.7:
			sp.NodeName = ptr.To(nodeName)
		case x < 0.8:
			sp.AllNodes = ptr.To(true)
		case x < 0.92:
			sp.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}},
			}}}
		default:
			sp.NodeName = ptr.To("node-2")
		}
		return sp
	}
	var slices []*resourceapi.ResourceSlice
	var devs []resourceapi.DeviceRequestAllocationResult
	for i := range numSlices {
		sp := spec()
		for d := range g.between(1, 6) {
			dev := g.device(f, fmt.Sprintf("dev-%d-%d", i, d), partitioned)
			sp.Devices = append(sp.Devices, dev)
			devs = append(devs, resourceapi.DeviceRequestAllocationResult{Driver: driver, Pool: name, Device: dev.Name})
		}
		slices = append(slices, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", driver, name, i)}, Spec: sp})
	}
	if partitioned {
		sp := spec()
		sp.SharedCounters = []resourceapi.CounterSet{{Name: "phys", Counters: map[string]resourceapi.Counter{
			"mem": {Value: *resource.NewQuantity(counterValue, resource.DecimalSI)},
		}}}
		slices = append(slices, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-counters", driver, name)}, Spec: sp})
	}
	if g.chance(0.05) {
		// A stale generation that must be ignored.
		stale := slices[0].DeepCopy()
		stale.Name += "-stale"
		stale.Spec.Pool.Generation = 0
		slices = append(slices, stale)
	}
	return slices, devs
}

func (g *gen) device(f scenario.Features, name string, partitioned bool) resourceapi.Device {
	d := resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			numaAttr:  {IntValue: ptr.To(int64(g.intn(2)))},
			modelAttr: {StringValue: ptr.To([]string{"a", "b"}[g.intn(2)])},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"example.com/memory": {Value: *resource.NewQuantity(int64(g.between(1, 4)), resource.DecimalSI)},
		},
	}
	if partitioned && g.chance(0.9) {
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "phys", Counters: map[string]resourceapi.Counter{
			"mem": {Value: *resource.NewQuantity(int64(g.between(1, 4)), resource.DecimalSI)},
		}}}
	}
	if f.DeviceTaints && g.chance(0.15) {
		effect := []resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute, resourceapi.DeviceTaintEffectNone}[g.intn(3)]
		d.Taints = []resourceapi.DeviceTaint{{Key: "example.com/unhealthy", Value: "true", Effect: effect}}
	}
	if f.ConsumableCapacity && g.chance(0.2) {
		d.AllowMultipleAllocations = ptr.To(true)
		bw := resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(g.between(4, 10)), resource.DecimalSI)}
		bw.RequestPolicy = g.requestPolicy()
		d.Capacity["example.com/bw"] = bw
	}
	return d
}

func exact(name, class string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
	}}
}

func claimObj(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
}

var classNames = []string{"gpu", "nic", "any"}

// selectors that never hit a CEL runtime error on generated devices.
var selectorPool = []string{
	`device.attributes["example.com"].model == "a"`,
	`device.attributes["example.com"].numa == 1`,
	`device.capacity["example.com"].memory.compareTo(quantity("2")) >= 0`,
}

func (g *gen) selectors() []resourceapi.DeviceSelector {
	if !g.chance(0.35) {
		return nil
	}
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selectorPool[g.intn(len(selectorPool))]}}}
}

func (g *gen) tolerations(f scenario.Features) []resourceapi.DeviceToleration {
	if !f.DeviceTaints || !g.chance(0.3) {
		return nil
	}
	return []resourceapi.DeviceToleration{{Key: "example.com/unhealthy", Operator: resourceapi.DeviceTolerationOpExists}}
}

func (g *gen) capacity(f scenario.Features) *resourceapi.CapacityRequirements {
	if !f.ConsumableCapacity || !g.chance(0.25) {
		return nil
	}
	return &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
		"example.com/bw": *resource.NewQuantity(int64(g.between(1, 5)), resource.DecimalSI),
	}}
}

// requestPolicy is one of KEP-5075's policies for a bandwidth of at least
// 4: none (a request without an amount takes it all), a range with a
// minimum and a step, a range with a maximum too, or valid values; each
// with a default, which the API requires with a range or values.
func (g *gen) requestPolicy() *resourceapi.CapacityRequestPolicy {
	q := func(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
	switch g.intn(4) {
	case 0:
		return nil
	case 1:
		return &resourceapi.CapacityRequestPolicy{Default: q(2), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(2), Step: q(2)}}
	case 2:
		return &resourceapi.CapacityRequestPolicy{Default: q(1), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q(1), Max: q(3), Step: q(1)}}
	}
	return &resourceapi.CapacityRequestPolicy{Default: q(1), ValidValues: []resource.Quantity{*q(1), *q(3), *q(4)}}
}

// count is 1, 2 or 3 devices, mostly 1.
func (g *gen) count() int64 {
	switch x := g.r.Float64(); {
	case x < 0.6:
		return 1
	case x < 0.9:
		return 2
	}
	return 3
}

func (g *gen) claim(f scenario.Features, name string) *resourceapi.ResourceClaim {
	c := claimObj(name)
	numRequests := g.between(1, 2)
	if g.chance(0.15) {
		numRequests = 3
	}
	for i := range numRequests {
		rn := fmt.Sprintf("req-%d", i)
		var req resourceapi.DeviceRequest
		switch x := g.r.Float64(); {
		case x < 0.2:
			var subs []resourceapi.DeviceSubRequest
			for j := range g.between(2, 3) {
				subs = append(subs, resourceapi.DeviceSubRequest{
					Name: fmt.Sprintf("sub-%d", j), DeviceClassName: classNames[g.intn(len(classNames))],
					Selectors: g.selectors(), AllocationMode: resourceapi.DeviceAllocationModeExactCount,
					Count: g.count(), Tolerations: g.tolerations(f), Capacity: g.capacity(f),
				})
			}
			req = resourceapi.DeviceRequest{Name: rn, FirstAvailable: subs}
		default:
			req = exact(rn, classNames[g.intn(len(classNames))], g.count())
			e := req.Exactly
			if g.chance(0.08) {
				e.AllocationMode, e.Count = resourceapi.DeviceAllocationModeAll, 0
			}
			e.Selectors = g.selectors()
			e.Tolerations = g.tolerations(f)
			e.Capacity = g.capacity(f)
			if g.chance(0.05) {
				e.AdminAccess = ptr.To(true)
			}
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	if g.chance(0.35) {
		attr := resourceapi.FullyQualifiedName(numaAttr)
		if g.chance(0.3) {
			attr = modelAttr
		}
		con := resourceapi.DeviceConstraint{}
		// distinctAttribute belongs to KEP-5075: the API drops it, and
		// upstream rejects it, unless ConsumableCapacity is on.
		if !f.ConsumableCapacity || g.chance(0.7) {
			con.MatchAttribute = &attr
		} else {
			con.DistinctAttribute = &attr
		}
		if numRequests > 1 && g.chance(0.5) {
			con.Requests = []string{"req-0", "req-1"}
		}
		c.Spec.Devices.Constraints = append(c.Spec.Devices.Constraints, con)
	}
	return c
}

func TestGenerateIsReproducible(t *testing.T) {
	for seed := range uint64(20) {
		a, err := scenario.Marshal(generate(seed))
		if err != nil {
			t.Fatalf("marshal seed %d: %v", seed, err)
		}
		b, _ := scenario.Marshal(generate(seed))
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Fatalf("seed %d generates different scenarios (-first +second):\n%s", seed, diff)
		}
	}
	a, _ := scenario.Marshal(generate(1))
	b, _ := scenario.Marshal(generate(2))
	if string(a) == string(b) {
		t.Errorf("seeds 1 and 2 generate the same scenario")
	}
}

// TestGeneratedScenariosAreValid: what the generator emits passes the
// scenario format's own validation, so reproducers load in `drakit allocate`.
func TestGeneratedScenariosAreValid(t *testing.T) {
	for seed := range uint64(200) {
		data, err := scenario.Marshal(generate(seed))
		if err != nil {
			t.Fatalf("marshal seed %d: %v", seed, err)
		}
		if _, err := scenario.Parse(data); err != nil {
			t.Fatalf("seed %d: generated scenario does not parse: %v\n%s", seed, err, data)
		}
	}
}
