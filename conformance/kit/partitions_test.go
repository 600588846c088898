package kit

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

var testNames = driverSettings(referenceDriverConfig().Declaration).PartitionNames()

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

func memory(bytes int64) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: *resource.NewQuantity(bytes, resource.BinarySI)}}
}

func consumes(set string, counters map[string]int64) []resourceapi.DeviceCounterConsumption {
	c := resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: map[string]resourceapi.Counter{}}
	for k, v := range counters {
		c.Counters[k] = resourceapi.Counter{Value: *resource.NewQuantity(v, resource.DecimalSI)}
	}
	return []resourceapi.DeviceCounterConsumption{c}
}

// migPartition is a published 1g.5gb-like partition of GPU-4 at start.
func migPartition(name, profile, parent string, mem int64, slices ...string) PublishedDevice {
	counters := map[string]int64{"multiprocessors": 14}
	for _, s := range slices {
		counters[s] = 1
	}
	return PublishedDevice{Node: "n", Pool: "n", Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": str(profile), "parentUUID": str(parent), "type": str("mig")},
		Capacity:   memory(mem), Consumes: consumes("gpu-4-counter-set", counters)}
}

const gib5 = 4864 << 20

func TestCheckCounters(t *testing.T) {
	t.Parallel()
	sets := map[string]map[string]resourceapi.CounterSet{"n": {"gpu-4-counter-set": {Name: "gpu-4-counter-set", Counters: map[string]resourceapi.Counter{
		"multiprocessors": {Value: resource.MustParse("98")}, "memory-slice-0": {Value: resource.MustParse("1")}, "memory-slice-4": {Value: resource.MustParse("1")},
	}}}}
	a := migPartition("a", "3g.20gb", "GPU-4", 0, "memory-slice-0")
	b := migPartition("b", "3g.20gb", "GPU-4", 0, "memory-slice-4")
	overlap := migPartition("c", "3g.20gb", "GPU-4", 0, "memory-slice-0")
	stranger := migPartition("d", "1g.5gb", "GPU-4", 0, "memory-slice-9")
	orphan := migPartition("e", "1g.5gb", "GPU-4", 0)
	orphan.Consumes[0].CounterSet = "gone"
	checkFindings(t, CheckCounters([]PublishedDevice{a, b}, sets), nil)
	checkFindings(t, CheckCounters([]PublishedDevice{a, overlap}, sets),
		[]string{"counter set gpu-4-counter-set of pool n: the allocated devices consume 2 of counter memory-slice-0, the set holds 1"})
	checkFindings(t, CheckCounters([]PublishedDevice{stranger}, sets),
		[]string{"counter memory-slice-9 is consumed but not in counter set gpu-4-counter-set of pool n"})
	checkFindings(t, CheckCounters([]PublishedDevice{orphan}, sets),
		[]string{"device n/e consumes counter set gone, which no slice of pool n declares"})
}

// TestPartitionSelectors evaluates the kit's CEL selectors the way the
// scheduler does, on partitions, a whole GPU and a device of another driver.
func TestPartitionSelectors(t *testing.T) {
	t.Parallel()
	p1g := migPartition("p1g", "1g.5gb", "GPU-4", gib5)
	p3g := migPartition("p3g", "3g.20gb", "GPU-4", 19968<<20)
	other := migPartition("other", "3g.20gb", "GPU-5", 19968<<20)
	whole := PublishedDevice{Pool: "n", Name: "gpu-4", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("GPU-4")}, Capacity: memory(40 << 30)}
	bare := PublishedDevice{Pool: "n", Name: "bare"}
	all := []PublishedDevice{p1g, p3g, other, whole, bare}
	tests := map[string]struct {
		exprs []string
		want  []string
	}{
		"profile on a parent":   {exprs: []string{testNames.UnitSelector("GPU-4", "3g.20gb")}, want: []string{"p3g"}},
		"parent":                {exprs: []string{testNames.parentSelector("GPU-4")}, want: []string{"p1g", "p3g"}},
		"either of two":         {exprs: []string{"(" + testNames.UnitSelector("GPU-4", "3g.20gb") + ") || (" + testNames.UnitSelector("GPU-5", "3g.20gb") + ")"}, want: []string{"p3g", "other"}},
		"leased identities":     {exprs: []string{inListSelector(testDriver, "uuid", []string{"GPU-4", "GPU-9", "GPU-4"})}, want: []string{"gpu-4"}},
		"leased parents":        {exprs: []string{inListSelector(testDriver, "parentUUID", []string{"GPU-5"})}, want: []string{"other"}},
		"at least 20G":          {exprs: []string{testNames.MemorySelector(resource.MustParse("20G"))}, want: []string{"p3g", "other", "gpu-4"}},
		"more than the 3g has":  {exprs: []string{testNames.MemorySelector(*resource.NewQuantity(19968<<20+1, resource.BinarySI))}, want: []string{"gpu-4"}},
		"whole GPU by UUID":     {exprs: []string{UuidSelector(testDriver, "uuid", "GPU-4")}, want: []string{"gpu-4"}},
		"a profile nothing has": {exprs: []string{testNames.UnitSelector("GPU-4", "7g.40gb")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := selectDevices(context.Background(), testNames.Driver, all, tc.exprs)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range got {
				names = append(names, d.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := selectDevices(context.Background(), testNames.Driver, all, []string{"device.attributes["}); err == nil || !strings.Contains(err.Error(), "compile CEL selector") {
		t.Errorf("a selector that does not compile: got %v", err)
	}
}

// checkFindings wants one finding per want entry, each containing it.
func checkFindings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d findings %q, want %d like %q", len(got), got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("finding %d: %q does not contain %q", i, got[i], want[i])
		}
	}
}
