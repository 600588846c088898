package poolstatus

import (
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/kit"
	resourceapi "k8s.io/api/resource/v1"
	resourcealpha "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const psDriver = "gpu.example.com"

func psSlice(pool string, gen, count int64, node string, devices ...resourceapi.Device) resourceapi.ResourceSlice {
	s := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: psDriver, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count}, Devices: devices,
	}}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

func psDevice(name string) resourceapi.Device { return resourceapi.Device{Name: name} }

func psClaim(admin bool, results ...[2]string) resourceapi.ResourceClaim {
	c := resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	for _, r := range results {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "r", Driver: psDriver, Pool: r[0], Device: r[1], AdminAccess: ptr.To(admin)})
	}
	return c
}

// TestExpectedPoolsCounts: only the newest generation counts, a pool short
// of slices is incomplete, allocated devices are counted once (adminAccess
// results not at all), taints and rules with NoSchedule/NoExecute make
// devices unavailable, allocated or not, nodeName needs one node for all
// slices, and pools are sorted.
func TestExpectedPoolsCounts(t *testing.T) {
	t.Parallel()
	tainted := psDevice("d2")
	tainted.Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	snap := poolSnapshot{
		Slices: []resourceapi.ResourceSlice{
			psSlice("b", 1, 1, "n1", psDevice("old")),
			psSlice("b", 2, 2, "n1", psDevice("d0"), psDevice("d1")),
			psSlice("b", 2, 2, "n1", tainted, psDevice("d3")),
			psSlice("a", 1, 2, "n1", psDevice("x")),
			psSlice("a", 1, 2, "n2", psDevice("y")),
			psSlice("c", 5, 3, "", psDevice("z")),
			{Spec: resourceapi.ResourceSliceSpec{Driver: "other.example.com", Pool: resourceapi.ResourcePool{Name: "b", ResourceSliceCount: 1}, Devices: []resourceapi.Device{psDevice("d0")}}},
		},
		Claims: []resourceapi.ResourceClaim{
			psClaim(false, [2]string{"b", "d0"}, [2]string{"b", "d2"}),
			psClaim(false, [2]string{"b", "d0"}),
			psClaim(true, [2]string{"b", "d1"}),
			{},
		},
		Rules: []resourceapi.DeviceTaintRule{
			{Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr.To("b"), Device: ptr.To("d3")}, Taint: resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoExecute}}},
			{Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Device: ptr.To("d1")}, Taint: resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNone}}},
			{Spec: resourceapi.DeviceTaintRuleSpec{Taint: resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
			{Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To("other.example.com")}, Taint: resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		},
	}
	got := expectedPools(snap, psDriver, "", "")
	want := []string{
		`gpu.example.com/a generation 1: 2 slices, node "", 2 devices, 0 allocated, 0 unavailable, 2 available, partitions none, shareable none, error none`,
		`gpu.example.com/b generation 2: 2 slices, node "n1", 4 devices, 2 allocated, 2 unavailable, 0 available, partitions none, shareable none, error none`,
		`gpu.example.com/c generation 5 incomplete`,
	}
	if len(got) != len(want) {
		t.Fatalf("expectedPools = %s, want %d pools", describeExpected(got), len(want))
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("pool %d = %s\nwant %s", i, got[i], want[i])
		}
	}
	if !got[1].AllocatedDevice("d2") || got[1].AllocatedDevice("d1") {
		t.Errorf("allocated devices of pool b: d2 %t (want true), d1 %t (want false: adminAccess)", got[1].AllocatedDevice("d2"), got[1].AllocatedDevice("d1"))
	}
	if only := expectedPools(snap, psDriver, "a", ""); len(only) != 1 || only[0].Pool != "a" {
		t.Errorf("pool filter a: %s", describeExpected(only))
	}
	if none := expectedPools(snap, "nobody.example.com", "", ""); len(none) != 0 {
		t.Errorf("unknown driver: %s", describeExpected(none))
	}
}

func psPartition(name, typ string, cost int64) resourceapi.Device {
	return resourceapi.Device{
		Name:             name,
		Attributes:       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"gpu.example.com/profile": {StringValue: ptr.To(typ)}},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: kit.TestCounters(cost)}},
	}
}

func psPartitionedPool(pool string, named bool) []resourceapi.ResourceSlice {
	counters := psSlice(pool, 1, 2, "")
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: kit.TestCounters(1 << 30)}}
	devices := psSlice(pool, 1, 2, "", psPartition("h0", "half", 1<<29), psPartition("h1", "half", 1<<29),
		psPartition("q0", "quarter", 1<<28), psPartition("q1", "quarter", 1<<28), psPartition("q2", "quarter", 1<<28), psPartition("q3", "quarter", 1<<28))
	if named {
		devices.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/profile"))
	}
	return []resourceapi.ResourceSlice{counters, devices}
}

// TestExpectedPoolsPartitions: the summary needs a named attribute (the
// slice's, else the request's default), counts how many of each type still
// fit in what allocated partitions left, and is replaced by a
// validationError when a type's devices draw differently or the pool has no
// counters.
func TestExpectedPoolsPartitions(t *testing.T) {
	t.Parallel()
	const attr = "gpu.example.com/profile"
	typed := poolSnapshot{Slices: psPartitionedPool("typed", true)}
	if got := partitionsString(expectedPools(typed, psDriver, "", "")[0].Partitions); got != attr+" half=2/2, "+attr+" quarter=4/4" {
		t.Errorf("free typed pool: %s", got)
	}
	typed.Claims = []resourceapi.ResourceClaim{psClaim(false, [2]string{"typed", "h0"})}
	if got := partitionsString(expectedPools(typed, psDriver, "", "")[0].Partitions); got != attr+" half=2/1, "+attr+" quarter=4/2" {
		t.Errorf("typed pool with h0 allocated: %s", got)
	}
	untyped := poolSnapshot{Slices: psPartitionedPool("untyped", false)}
	if got := expectedPools(untyped, psDriver, "", "")[0]; got.Partitions != nil || got.ViewError != "" {
		t.Errorf("untyped pool without a default: %s", got)
	}
	if got := partitionsString(expectedPools(untyped, psDriver, "", attr)[0].Partitions); got != attr+" half=2/2, "+attr+" quarter=4/4" {
		t.Errorf("untyped pool with the default: %s", got)
	}
	if got := expectedPools(untyped, psDriver, "", "other.example.com/profile")[0]; got.ViewError != poolErrPartitionTypeMissing {
		t.Errorf("untyped pool with a default its devices lack: %s", got)
	}
	bare := poolSnapshot{Slices: psPartitionedPool("bare", false)}
	for _, d := range bare.Slices[1].Spec.Devices {
		d.Attributes["profile"] = d.Attributes[attr]
		delete(d.Attributes, attr)
	}
	if got := partitionsString(expectedPools(bare, psDriver, "", attr)[0].Partitions); got != attr+" half=2/2, "+attr+" quarter=4/4" {
		t.Errorf("pool whose devices name the attribute bare, in the driver's domain: %s", got)
	}
	noCounters := poolSnapshot{Slices: psPartitionedPool("p", true)[1:]}
	noCounters.Slices[0].Spec.Pool.ResourceSliceCount = 1
	if got := expectedPools(noCounters, psDriver, "", "")[0]; got.ViewError != poolErrPartitionTypeMissing || got.Partitions != nil || got.Total != 6 {
		t.Errorf("pool without counters: %s", got)
	}
	mixed := poolSnapshot{Slices: psPartitionedPool("m", true)}
	mixed.Slices[1].Spec.Devices[1].ConsumesCounters[0].CounterSet = "gpu-1"
	if got := expectedPools(mixed, psDriver, "", "")[0]; got.ViewError != poolErrPartitionCost || got.Partitions != nil {
		t.Errorf("pool whose halves draw from different sets: %s", got)
	}
}

// TestExpectedPoolsShareable: only devices that allow multiple allocations
// count, partially available once a claim holds them, with their capacity
// summed and the claims' consumption subtracted.
func TestExpectedPoolsShareable(t *testing.T) {
	t.Parallel()
	shared := func(name string) resourceapi.Device {
		d := psDevice(name)
		d.AllowMultipleAllocations = ptr.To(true)
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {Value: resource.MustParse("10G")}}
		return d
	}
	claim := psClaim(false, [2]string{"s", "s0"})
	claim.Status.Allocation.Devices.Results[0].ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": resource.MustParse("4G")}
	snap := poolSnapshot{Slices: []resourceapi.ResourceSlice{psSlice("s", 1, 1, "", shared("s0"), shared("s1"), psDevice("plain"))}, Claims: []resourceapi.ResourceClaim{claim}}
	got := expectedPools(snap, psDriver, "", "")[0]
	if s := shareableString(got.Shareable); s != "1 fully, 1 partially available; bandwidth total 20000000000 consumed 4000000000 available 16000000000" {
		t.Errorf("shareable summary: %s", s)
	}
	plain := poolSnapshot{Slices: []resourceapi.ResourceSlice{psSlice("p", 1, 1, "", psDevice("plain"))}}
	if got := expectedPools(plain, psDriver, "", "")[0]; got.Shareable != nil {
		t.Errorf("pool without shareable devices: %s", got)
	}
}

// TestComparePool: every difference is a finding; an exact copy has none.
func TestComparePool(t *testing.T) {
	t.Parallel()
	want := expectedPools(poolSnapshot{Slices: psPartitionedPool("typed", true)}, psDriver, "", "")[0]
	good := resourcealpha.PoolStatus{Driver: psDriver, PoolName: "typed", Generation: 1, ResourceSliceCount: ptr.To[int32](2),
		TotalDevices: ptr.To[int32](6), AllocatedDevices: ptr.To[int32](0), UnavailableDevices: ptr.To[int32](0), AvailableDevices: ptr.To[int32](6),
		PartitionSummary: want.Partitions}
	if diffs := comparePool(good, want); len(diffs) != 0 {
		t.Errorf("comparePool of an exact copy: %v", diffs)
	}
	bad := good
	bad.AvailableDevices = ptr.To[int32](5)
	bad.NodeName = ptr.To("n1")
	bad.PartitionSummary = nil
	bad.ValidationError = ptr.To("PartitionCostMismatch: x")
	diffs := strings.Join(comparePool(bad, want), "\n")
	for _, w := range []string{"availableDevices 5, the stored objects give 6", `nodeName "n1"`, "partitionSummary none", `validationError "PartitionCostMismatch: x", expected none`} {
		if !strings.Contains(diffs, w) {
			t.Errorf("comparePool findings lack %q:\n%s", w, diffs)
		}
	}
	incomplete := expectedPool{Driver: psDriver, Pool: "typed", Generation: 1, Incomplete: true}
	if d := comparePool(good, incomplete); len(d) != 1 || !strings.Contains(d[0], "expected a validationError and no counts") {
		t.Errorf("comparePool of a counted pool the kit finds incomplete: %v", d)
	}
}

// TestAnsweredCompare: poolCount counts all pools, the list stops at the
// limit, in order, and the condition must be Complete.
func TestAnsweredCompare(t *testing.T) {
	t.Parallel()
	snap := poolSnapshot{Slices: []resourceapi.ResourceSlice{psSlice("a", 1, 1, "", psDevice("x")), psSlice("b", 1, 1, "", psDevice("y")), psSlice("c", 1, 1, "", psDevice("z"))}}
	want := expectedPools(snap, psDriver, "", "")
	pool := func(name string) resourcealpha.PoolStatus {
		return resourcealpha.PoolStatus{Driver: psDriver, PoolName: name, Generation: 1, ResourceSliceCount: ptr.To[int32](1),
			TotalDevices: ptr.To[int32](1), AllocatedDevices: ptr.To[int32](0), UnavailableDevices: ptr.To[int32](0), AvailableDevices: ptr.To[int32](1)}
	}
	req := func(count int32, pools ...resourcealpha.PoolStatus) *resourcealpha.ResourcePoolStatusRequest {
		return &resourcealpha.ResourcePoolStatusRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Spec:       resourcealpha.ResourcePoolStatusRequestSpec{Driver: psDriver, Limit: ptr.To[int32](2)},
			Status: &resourcealpha.ResourcePoolStatusRequestStatus{PoolCount: ptr.To(count), Pools: pools,
				Conditions: []metav1.Condition{{Type: "Complete", Status: metav1.ConditionTrue, Reason: "CalculationComplete"}}},
		}
	}
	if d := (answered{req: req(3, pool("a"), pool("b")), want: want}).compare(); len(d) != 0 {
		t.Errorf("a correct truncated answer: %v", d)
	}
	d := strings.Join((answered{req: req(2, pool("b"), pool("a")), want: want}).compare(), "\n")
	for _, w := range []string{"poolCount 2, the stored slices hold 3 pools", "pools[0] is gpu.example.com/b, sorted by driver and name it must be gpu.example.com/a"} {
		if !strings.Contains(d, w) {
			t.Errorf("findings lack %q:\n%s", w, d)
		}
	}
	failed := req(3, pool("a"), pool("b"))
	failed.Status.Conditions = []metav1.Condition{{Type: "Failed", Status: metav1.ConditionTrue, Reason: "CalculationFailed"}}
	if d := (answered{req: failed, want: want}).compare(); len(d) != 1 || !strings.Contains(d[0], "expected condition Complete=True") {
		t.Errorf("a Failed answer: %v", d)
	}
}
