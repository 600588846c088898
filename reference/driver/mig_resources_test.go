package driver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// poolSlices splits the pool's slices into device and counter slices.
func poolSlices(t *testing.T, inv *Inventory, opts publishOptions) (devs []resourceapi.Device, devSlices, counterSlices int, sets []resourceapi.CounterSet) {
	t.Helper()
	res, err := buildResources(testNode, inv, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Pools[testNode].Slices {
		if len(s.Devices) > 0 && len(s.SharedCounters) > 0 {
			t.Fatalf("a slice sets both devices and sharedCounters")
		}
		if len(s.SharedCounters) > 0 {
			counterSlices++
			if len(s.SharedCounters) > maxCounterSetsPerSlice {
				t.Errorf("slice has %d counter sets", len(s.SharedCounters))
			}
			sets = append(sets, s.SharedCounters...)
			continue
		}
		devSlices++
		consuming := slices.ContainsFunc(s.Devices, func(d resourceapi.Device) bool { return len(d.ConsumesCounters) > 0 })
		if consuming && len(s.Devices) > maxConsumingDevicesPerSlice || len(s.Devices) > maxDevicesPerSlice {
			t.Errorf("slice has %d devices (consuming counters: %v)", len(s.Devices), consuming)
		}
		if (s.PartitionTypeAttribute != nil) != (opts.PartitionAlpha && consuming) {
			t.Errorf("partitionTypeAttribute %v with alpha %v, consuming %v", s.PartitionTypeAttribute, opts.PartitionAlpha, consuming)
		}
		devs = append(devs, s.Devices...)
	}
	return devs, devSlices, counterSlices, sets
}

func TestBuildResourcesMIG(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	devs, devSlices, counterSlices, sets := poolSlices(t, env.inventory, publishOptions{DriverName: testDriver})
	if devSlices != 1 || counterSlices != 1 {
		t.Errorf("%d device slices and %d counter slices, want 1 and 1", devSlices, counterSlices)
	}
	byName := map[string]resourceapi.Device{}
	var names []string
	for _, d := range devs {
		byName[d.Name] = d
		names = append(names, d.Name)
	}
	// Full GPU, 7+3+2+1+1+7+4 placements, then the GPU without MIG.
	want := []string{"gpu-0"}
	for _, p := range []struct {
		label  string
		starts []int
	}{{"1g10gb", []int{0, 1, 2, 3, 4, 5, 6}}, {"2g20gb", []int{0, 2, 4}}, {"3g40gb", []int{0, 4}}, {"4g40gb", []int{0}},
		{"7g80gb", []int{0}}, {"1g10gb-me", []int{0, 1, 2, 3, 4, 5, 6}}, {"1g20gb", []int{0, 2, 4, 6}}} {
		for _, s := range p.starts {
			want = append(want, fmt.Sprintf("gpu-0-mig-%s-%d", p.label, s))
		}
	}
	want = append(want, "gpu-1")
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("device names (-want +got):\n%s", diff)
	}

	qty := func(s string) resourceapi.Counter { return resourceapi.Counter{Value: resource.MustParse(s)} }
	wantSet := map[string]resourceapi.Counter{
		"multiprocessors": qty("132"), "copy-engines": qty("8"), "decoders": qty("7"), "jpeg-engines": qty("7"),
		"ofa-engines": qty("1"), "memory": qty("81152Mi"),
	}
	for i := range 8 {
		wantSet[fmt.Sprintf("memory-slice-%d", i)] = qty("1")
	}
	quantityEqual := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff([]resourceapi.CounterSet{{Name: "gpu-0-counter-set", Counters: wantSet}}, sets, quantityEqual); diff != "" {
		t.Errorf("counter sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: wantSet}}, byName["gpu-0"].ConsumesCounters, quantityEqual); diff != "" {
		t.Errorf("full GPU consumption (-want +got):\n%s", diff)
	}
	wantPart := map[string]resourceapi.Counter{
		"multiprocessors": qty("60"), "copy-engines": qty("3"), "decoders": qty("3"), "jpeg-engines": qty("3"), "memory": qty("40448Mi"),
		"memory-slice-4": qty("1"), "memory-slice-5": qty("1"), "memory-slice-6": qty("1"), "memory-slice-7": qty("1"),
	}
	part := byName["gpu-0-mig-3g40gb-4"]
	if diff := cmp.Diff([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: wantPart}}, part.ConsumesCounters, quantityEqual); diff != "" {
		t.Errorf("3g.40gb at 4 consumption (-want +got):\n%s", diff)
	}
	g0 := env.inventory.GPUs[0]
	for attr, want := range map[resourceapi.QualifiedName]string{
		"type": "mig", "profile": "3g.40gb", "parentUUID": g0.UUID, "productName": g0.ProductName,
	} {
		if got := part.Attributes[attr].StringValue; got == nil || *got != want {
			t.Errorf("3g.40gb attribute %s = %v, want %q", attr, got, want)
		}
	}
	for attr, want := range map[resourceapi.QualifiedName]int64{"parentMinor": 0, "placementStart": 4, "placementSize": 4, "profileID": 9} {
		if got := part.Attributes[attr].IntValue; got == nil || *got != want {
			t.Errorf("3g.40gb attribute %s = %v, want %d", attr, got, want)
		}
	}
	if got, want := part.Capacity["memory"].Value, resource.MustParse("40448Mi"); got.Cmp(want) != 0 {
		t.Errorf("3g.40gb memory %s, want %s", got.String(), want.String())
	}
	if got := byName["gpu-1"]; len(got.ConsumesCounters) != 0 || *got.Attributes["type"].StringValue != "gpu" || got.Attributes["profile"].StringValue != nil {
		t.Errorf("GPU without MIG published as %+v, want a plain full GPU", got)
	}
	for _, d := range devs {
		for _, c := range d.ConsumesCounters {
			if len(c.CompatibilityGroups) != 0 {
				t.Errorf("device %s has compatibility groups with the alpha fields off", d.Name)
			}
		}
	}

	// Alpha fields on: partition type attribute and compatibility groups.
	devs, _, _, _ = poolSlices(t, env.inventory, publishOptions{DriverName: testDriver, PartitionAlpha: true})
	for _, d := range devs {
		if len(d.ConsumesCounters) == 0 {
			continue
		}
		want := []string{"mig"}
		if d.Name == "gpu-0" {
			want = []string{"full-gpu"}
		}
		if !slices.Equal(d.ConsumesCounters[0].CompatibilityGroups, want) {
			t.Errorf("device %s compatibility groups %v, want %v", d.Name, d.ConsumesCounters[0].CompatibilityGroups, want)
		}
		if d.Attributes["profile"].StringValue == nil {
			t.Errorf("device %s consumes counters but has no string profile attribute", d.Name)
		}
	}
}

// TestMIGCountersAdmitEveryLayout checks that the counters never reject a
// layout NVML accepts: every set of non-overlapping placements (at most 7
// MIG devices, at most one +me) fits the counter set, and every placement
// overlapping a chosen one is blocked by a memory slice counter.
func TestMIGCountersAdmitEveryLayout(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	devs, _, _, sets := poolSlices(t, env.inventory, publishOptions{DriverName: testDriver})
	total := sets[0].Counters
	var parts []resourceapi.Device
	for _, d := range devs {
		if d.Attributes["type"].StringValue != nil && *d.Attributes["type"].StringValue == "mig" {
			parts = append(parts, d)
		}
	}
	layouts := 0
	var walk func(from int, used map[string]resource.Quantity, n, me int)
	walk = func(from int, used map[string]resource.Quantity, n, me int) {
		layouts++
		for name, q := range used {
			if limit := total[name].Value; q.Cmp(limit) > 0 {
				t.Fatalf("a layout of %d devices uses %s of %s, the set has %s", n, &q, name, &limit)
			}
		}
		if n == 7 {
			return
		}
		for i := from; i < len(parts); i++ {
			c := parts[i].ConsumesCounters[0].Counters
			isME := strings.HasSuffix(*parts[i].Attributes["profile"].StringValue, "+me")
			overlap := false
			for name := range c {
				if q, ok := used[name]; ok && strings.HasPrefix(name, "memory-slice-") && q.Sign() > 0 {
					overlap = true
				}
			}
			if overlap || (isME && me > 0) {
				continue
			}
			next := map[string]resource.Quantity{}
			for k, v := range used {
				next[k] = v.DeepCopy()
			}
			for name, q := range c {
				v := next[name]
				v.Add(q.Value)
				next[name] = v
			}
			walk(i+1, next, n+1, me+map[bool]int{true: 1}[isME])
		}
	}
	walk(0, map[string]resource.Quantity{}, 0, 0)
	if layouts < 100 {
		t.Errorf("only %d layouts checked", layouts)
	}
}

func TestBuildResourcesMIGSlicesLimits(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	// 20 copies of the MIG GPU: 20 counter sets (3 slices of at most 8),
	// 20·26 consuming devices in slices of at most 64.
	inv := *env.inventory
	inv.GPUs = nil
	for i := range 20 {
		g := env.inventory.GPUs[0]
		g.Minor, g.Index = i, i
		inv.GPUs = append(inv.GPUs, g)
	}
	devs, devSlices, counterSlices, sets := poolSlices(t, &inv, publishOptions{DriverName: testDriver})
	if len(devs) != 20*26 || len(sets) != 20 || counterSlices != 3 || devSlices != (20*26+63)/64 {
		t.Errorf("%d devices in %d slices, %d counter sets in %d slices; want %d in %d, 20 in 3",
			len(devs), devSlices, len(sets), counterSlices, 20*26, (20*26+63)/64)
	}
}
