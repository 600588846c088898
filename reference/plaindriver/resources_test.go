package plaindriver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

func wantDevice(name string, index int, serial string) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"index":  {IntValue: ptr.To(int64(index))},
			"serial": {StringValue: ptr.To(serial)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"size": {Value: resource.MustParse("1Gi")}},
	}
}

func TestBuildResources(t *testing.T) {
	t.Parallel()
	correct := []resourceapi.Device{
		wantDevice("dev-0", 0, "PLN-12ca17b4-0"),
		wantDevice("dev-1", 1, "PLN-12ca17b4-1"),
		wantDevice("dev-2", 2, "PLN-12ca17b4-2"),
	}
	for _, tc := range []struct {
		defect Defect
		want   []resourceapi.Device
	}{
		{"", correct},
		{DefectExtraDevice, correct},
		{DefectLeaveCDISpec, correct},
		// One more device, the next index, named like the first.
		{DefectDuplicateDeviceNames, append(correct[:3:3], wantDevice("dev-0", 3, "PLN-12ca17b4-3"))},
	} {
		t.Run("defect="+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			got := buildResources(testNode, testNode, nodeDevices(testNode, 3, ""), "", tc.defect)
			want := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
				testNode: {Slices: []resourceslice.Slice{{Devices: tc.want}}},
			}}
			// Quantities compare by value, as the apiserver stores them.
			opt := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })
			if diff := cmp.Diff(want, got, opt); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

// publishedDevices returns the pool's devices by name and its counter
// sets.
func publishedDevices(t *testing.T, s Style, d Defect, n int) (map[string]resourceapi.Device, []resourceapi.CounterSet) {
	t.Helper()
	res := buildResources(testNode, testNode, nodeDevices(testNode, n, s), s, d)
	devs := map[string]resourceapi.Device{}
	var sets []resourceapi.CounterSet
	for _, sl := range res.Pools[testNode].Slices {
		if len(sl.SharedCounters) > 0 && len(sl.Devices) > 0 {
			t.Error("a slice has both counter sets and devices")
		}
		sets = append(sets, sl.SharedCounters...)
		for _, dev := range sl.Devices {
			devs[dev.Name] = dev
		}
	}
	return devs, sets
}

func slots(d resourceapi.Device) int64 {
	if len(d.ConsumesCounters) != 1 {
		return -1
	}
	q := d.ConsumesCounters[0].Counters["slots"].Value
	return q.Value()
}

func TestSliceDefects(t *testing.T) {
	t.Parallel()
	devs, _ := publishedDevices(t, "", DefectDuplicateIdentity, 3)
	if *devs["dev-1"].Attributes["serial"].StringValue != *devs["dev-0"].Attributes["serial"].StringValue {
		t.Errorf("duplicate-identity: dev-1's serial %s is not dev-0's", *devs["dev-1"].Attributes["serial"].StringValue)
	}
	devs, _ = publishedDevices(t, "", DefectAttributeType, 3)
	for name, d := range devs {
		if a := d.Attributes["resource.kubernetes.io/numaNode"]; a.StringValue == nil || a.IntValue != nil {
			t.Errorf("attribute-type: %s's numaNode is %+v, want a string", name, a)
		}
	}
	devs, _ = publishedDevices(t, "", "", 3)
	for name, d := range devs {
		if _, ok := d.Attributes["resource.kubernetes.io/numaNode"]; ok {
			t.Errorf("correct driver: %s publishes numaNode", name)
		}
	}
}

// TestPartitionsStyle: each device is a counter set of 4 slots, consumed
// whole by the device, 2 by each of its 2 halves, 1 by each of its 4
// quarters; the counter defects change exactly that.
func TestPartitionsStyle(t *testing.T) {
	t.Parallel()
	devs, sets := publishedDevices(t, StylePartitions, "", 2)
	if len(devs) != 2*7 || len(sets) != 2 {
		t.Fatalf("%d devices, %d counter sets, want 14 and 2", len(devs), len(sets))
	}
	if q := sets[0].Counters["slots"].Value; sets[0].Name != "dev-0-counters" || q.Value() != 4 {
		t.Errorf("counter set %+v", sets[0])
	}
	for name, want := range map[string]int64{"dev-0": 4, "dev-0-half-1": 2, "dev-1-quarter-3": 1} {
		d := devs[name]
		if got := slots(d); got != want {
			t.Errorf("%s consumes %d slots, want %d", name, got, want)
		}
	}
	half := devs["dev-1-half-0"]
	if *half.Attributes["kind"].StringValue != "partition" || *half.Attributes["profile"].StringValue != "half" ||
		*half.Attributes["parentSerial"].StringValue != *devs["dev-1"].Attributes["serial"].StringValue || half.ConsumesCounters[0].CounterSet != "dev-1-counters" {
		t.Errorf("dev-1-half-0 %+v", half)
	}
	if *devs["dev-1"].Attributes["kind"].StringValue != "whole" {
		t.Error("dev-1 is not of kind whole")
	}
	devs, _ = publishedDevices(t, StylePartitions, DefectCountersOvercommitted, 2)
	if got := slots(devs["dev-0-quarter-3"]); got <= deviceSlots {
		t.Errorf("counters-overcommitted: the last quarter consumes %d of %d slots", got, deviceSlots)
	}
	devs, _ = publishedDevices(t, StylePartitions, DefectCountersUnderconsumed, 2)
	if got := slots(devs["dev-0"]); got >= deviceSlots {
		t.Errorf("counters-underconsumed: the whole device consumes %d of %d slots", got, deviceSlots)
	}
}

// TestConsumableCapacityStyle: beside the whole devices, two shared
// devices that allow multiple allocations of their bandwidth in 1Gi steps.
func TestConsumableCapacityStyle(t *testing.T) {
	t.Parallel()
	devs, _ := publishedDevices(t, StyleConsumableCapacity, "", 2)
	if len(devs) != 4 {
		t.Fatalf("%d devices, want 4", len(devs))
	}
	s := devs["shared-1"]
	bw, ok := s.Capacity["bandwidth"]
	if !ok || !ptr.Deref(s.AllowMultipleAllocations, false) || *s.Attributes["kind"].StringValue != "shared" || bw.RequestPolicy == nil ||
		bw.RequestPolicy.Default.Cmp(resource.MustParse("1Gi")) != 0 || bw.RequestPolicy.ValidRange.Step.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("shared-1 %+v", s)
	}
	if _, ok := s.Capacity["size"]; ok {
		t.Error("shared-1 has a size without a request policy: every share would consume all of it")
	}
	if ptr.Deref(devs["dev-0"].AllowMultipleAllocations, false) || *devs["dev-0"].Attributes["kind"].StringValue != "whole" {
		t.Errorf("dev-0 %+v", devs["dev-0"])
	}
}

func TestDeviceClasses(t *testing.T) {
	t.Parallel()
	if got := DeviceClasses("x.plain.drakit.dev", StyleEnvOnly); len(got) != 1 || got[0].Expression != `device.driver == "x.plain.drakit.dev"` {
		t.Errorf("env-only: %+v", got)
	}
	got := DeviceClasses("x.plain.drakit.dev", StylePartitions)
	if len(got) != 2 || got[1].Name != "partition.x.plain.drakit.dev" ||
		got[1].Expression != `device.driver == "x.plain.drakit.dev" && device.attributes["x.plain.drakit.dev"].kind == "partition"` {
		t.Errorf("partitions: %+v", got)
	}
}
