package inventory

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// slices8 consumes the memory slices [from, from+n) of counter set set.
func slices8(set string, from, n int) []resourceapi.DeviceCounterConsumption {
	c := map[string]resourceapi.Counter{}
	for i := from; i < from+n; i++ {
		c[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	return []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: c}}
}

func migSet(name string) resourceapi.CounterSet {
	c := map[string]resourceapi.Counter{}
	for i := 0; i < 8; i++ {
		c[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	return resourceapi.CounterSet{Name: name, Counters: c}
}

// migGPU is an A100-40GB-like GPU in MIG mode: the whole GPU and every
// placement of 1g (7, one slice each), 3g (at 0 and 4, four slices), 4g (at
// 0) and 7g (at 0, every slice), all drawing on one counter set.
func migGPU(pool string, minor int) []Device {
	set := fmt.Sprintf("gpu-%d-counters", minor)
	uuid := fmt.Sprintf("GPU-%d", minor)
	devs := []Device{{Kind: KindWhole, Pool: pool, Name: fmt.Sprintf("gpu-%d", minor), Identity: uuid, Consumes: slices8(set, 0, 8)}}
	part := func(profile string, start, n int) Device {
		return Device{Kind: KindPartition, Pool: pool, Name: fmt.Sprintf("gpu-%d-mig-%s-%d", minor, profile, start),
			Parent: uuid, Profile: profile, Consumes: slices8(set, start, n)}
	}
	for s := 0; s < 7; s++ {
		devs = append(devs, part("1g.5gb", s, 1))
	}
	devs = append(devs, part("3g.20gb", 0, 4), part("3g.20gb", 4, 4), part("4g.20gb", 0, 4), part("7g.40gb", 0, 8))
	return devs
}

func numa(n int64) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"resource.kubernetes.io/numaNode": {IntValue: ptr.To(n)}}
}

// node is 2 plain GPUs on NUMA node 0, 1 on node 1, two MIG GPUs and a GPU
// with two pre-created MIG devices.
func node() ([]Device, CounterSets) {
	devs := []Device{
		{Kind: KindWhole, Pool: "n", Name: "gpu-0", Identity: "GPU-0", Attributes: numa(0)},
		{Kind: KindWhole, Pool: "n", Name: "gpu-1", Identity: "GPU-1", Attributes: numa(0)},
		{Kind: KindWhole, Pool: "n", Name: "gpu-2", Identity: "GPU-2", Attributes: numa(1)},
		{Kind: KindPartition, Pool: "n", Name: "gpu-7-mig-gi1", Identity: "MIG-a", Parent: "GPU-7", Profile: "3g.20gb"},
		{Kind: KindPartition, Pool: "n", Name: "gpu-7-mig-gi2", Identity: "MIG-b", Parent: "GPU-7", Profile: "3g.20gb"},
	}
	devs = append(devs, migGPU("n", 4)...)
	devs = append(devs, migGPU("n", 5)...)
	sets := CounterSets{"n": {"gpu-4-counters": migSet("gpu-4-counters"), "gpu-5-counters": migSet("gpu-5-counters")}}
	return devs, sets
}

func TestUnits(t *testing.T) {
	devs, sets := node()
	units := Units(devs, sets)
	var got []string
	for _, u := range units {
		got = append(got, fmt.Sprintf("%s whole=%d partitions=%d partitionable=%t pre=%d", u.ID, len(u.Whole), len(u.Partitions), u.Partitionable(), len(u.PreCreated())))
	}
	want := []string{
		"n/gpu-0 whole=1 partitions=0 partitionable=false pre=0",
		"n/gpu-1 whole=1 partitions=0 partitionable=false pre=0",
		"n/gpu-2 whole=1 partitions=0 partitionable=false pre=0",
		"n/gpu-4 whole=1 partitions=11 partitionable=true pre=0",
		"n/gpu-5 whole=1 partitions=11 partitionable=true pre=0",
		// The pre-created MIG devices of GPU-7, whose whole device is not
		// published (it is in MIG mode): a unit of their own.
		"n/gpu-7-mig-gi1 whole=0 partitions=2 partitionable=false pre=2",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("units:\n got %q\nwant %q", got, want)
	}
}

func TestProfileRoles(t *testing.T) {
	devs, sets := node()
	var mig Unit
	for _, u := range Units(devs, sets) {
		if u.ID == "n/gpu-4" {
			mig = u
		}
	}
	if got, want := mig.ProfileSummary(), "1g.5gb: 7 together; 3g.20gb: 2 together; 4g.20gb: 1 together; 7g.40gb: 1 together, exclusive"; got != want {
		t.Errorf("profiles: %s\nwant      %s", got, want)
	}
	for role, want := range map[Role]string{RoleSmallest: "1g.5gb", RoleHalf: "3g.20gb", RoleExclusive: "7g.40gb"} {
		p, ok := mig.Profile(role)
		if !ok || p.Profile != want {
			t.Errorf("role %s: %q (%t), want %q", role, p.Profile, ok, want)
		}
	}
	// A unit whose partitions never fit two at a time has no smallest or
	// half profile.
	single := Units([]Device{
		{Kind: KindWhole, Pool: "p", Name: "d", Identity: "D", Consumes: slices8("s", 0, 8)},
		{Kind: KindPartition, Pool: "p", Name: "d-big", Parent: "D", Profile: "big", Consumes: slices8("s", 0, 6)},
	}, CounterSets{"p": {"s": migSet("s")}})[0]
	for _, r := range []Role{RoleSmallest, RoleHalf} {
		if p, ok := single.Profile(r); ok {
			t.Errorf("role %s: got %q, want none", r, p.Profile)
		}
	}
	if p, ok := single.Profile(RoleExclusive); !ok || p.Profile != "big" {
		t.Errorf("exclusive: %q (%t), want big", p.Profile, ok)
	}
	// A partition that draws on a counter its set lacks never fits.
	broken := Units([]Device{
		{Kind: KindPartition, Pool: "p", Name: "x", Parent: "D", Profile: "x", Consumes: []resourceapi.DeviceCounterConsumption{{CounterSet: "s", Counters: map[string]resourceapi.Counter{"nope": {Value: resource.MustParse("1")}}}}},
	}, CounterSets{"p": {"s": migSet("s")}})[0]
	if p := broken.Profiles["x"]; p.Together != 0 || p.Exclusive {
		t.Errorf("partition on a missing counter: %+v, want none together and not exclusive", p)
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range Roles() {
		if got, err := ParseRole(string(r)); err != nil || got != r {
			t.Errorf("ParseRole(%s) = %s, %v", r, got, err)
		}
	}
	if _, err := ParseRole("1g"); err == nil {
		t.Error("ParseRole(1g): no error")
	}
}
