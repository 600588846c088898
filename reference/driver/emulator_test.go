package driver

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// TestDiscoverEmulatedDGXH100 runs the real discovery path, go-nvml over the
// emulator's NVML shim plus deviceattribute over the rendered sysfs, against
// a rendered dgx-h100 root. A process binds the first NVML library it loads
// for good and the shim derives its root from that library's path, so the
// test runs in a fresh test process of its own, where it is the first to
// load one; the other tests on the real shim point it at their roots through
// nvmltest.RootEnv and may run in any order.
func TestDiscoverEmulatedDGXH100(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	// An empty root variable makes the shim derive its root from its own
	// path, as in production.
	t.Setenv(nvmltest.RootEnv, "")
	root := renderProfile(t, builtinProfile(t, "dgx-h100"))

	disc, lib, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.172.08"); lib != want {
		t.Errorf("NVML library %s, want %s", lib, want)
	}
	got, err := disc.Discover(t.Context())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}

	// The expectation comes from the rendered state file (what the "kernel
	// driver" says) and the profile's topology, independently of NVML.
	state := readState(t, root)
	want := &Inventory{DriverVersion: "570.172.08", CUDADriverVersion: 12080}
	for i, g := range state.GPUs {
		bdf, err := sysfsBusID(g.BusID)
		if err != nil {
			t.Fatal(err)
		}
		brand, err := BrandName(gonvml.BrandType(g.Brand))
		if err != nil {
			t.Fatal(err)
		}
		// socket0 (bus 0x00) has minors 0-3 on NUMA node 0, socket1
		// (bus 0x80) minors 4-7 on NUMA node 1.
		socket := g.Minor / 4
		want.GPUs = append(want.GPUs, GPU{
			Index: i, Minor: g.Minor, UUID: g.UUID, ProductName: "NVIDIA H100 80GB HBM3",
			Architecture: "Hopper", Brand: brand, CCMajor: 9, CCMinor: 0, MemoryBytes: g.MemoryTotal,
			PCIBusID: bdf, PCIeRoot: fmt.Sprintf("pci0000:%02x", socket*0x80), NUMANode: socket,
		})
	}
	if len(want.GPUs) != 8 {
		t.Fatalf("state file lists %d GPUs, the profile has 8", len(want.GPUs))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}

	// What would be published from it passes the driver's own checks.
	if _, err := buildResources(testNode, got, publishOptions{}); err != nil {
		t.Errorf("build resources from the emulated inventory: %v", err)
	}
}

// TestDiscoverEmulatedMixedMIG discovers the mixed-mig profile through the
// real shim (not parallel: the shim's root comes from the environment; the
// library bound by the first test that loads one serves every later one):
// two A100s in static MIG mode, two H100s in dynamic MIG mode, two H200s
// without MIG. The expectation comes from the rendered state file and the
// emulator's MIG tables.
func TestDiscoverEmulatedMixedMIG(t *testing.T) {
	root, inv := renderAndDiscover(t, builtinProfile(t, "mixed-mig"))
	state := readState(t, root)

	// Every CI of the state file is a static MIG device with its UUID,
	// profile name and capability minors.
	type static struct {
		name, uuid, profile string
		giMinor, ciMinor    int
	}
	var wantStatic, gotStatic []static
	giProfiles := map[[2]int]nvmlstate.GPUInstance{}
	for _, gi := range state.GPUInstances {
		giProfiles[[2]int{gi.GPU, gi.ID}] = gi
	}
	for _, ci := range state.ComputeInstances {
		gi := giProfiles[[2]int{ci.GPU, ci.GI}]
		var name string
		for _, gp := range state.GIProfiles {
			if gp.GPU == ci.GPU && gp.ID == gi.Profile {
				name = gp.Name
				if ci.Size != gp.Slices {
					name = fmt.Sprintf("%dc.%s", ci.Size, gp.Name)
				}
			}
		}
		wantStatic = append(wantStatic, static{fmt.Sprintf("gpu-%d-mig-gi%d-ci%d", ci.GPU, ci.GI, ci.ID), ci.UUID, name, gi.CapMinor, ci.CapMinor})
	}
	devs, err := inv.devices(nil)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[int]map[string]bool{} // GPU minor → partition profile names
	var full []string
	for _, d := range devs {
		switch d.Kind {
		case kindMIGStatic:
			gotStatic = append(gotStatic, static{d.Name, d.Instance.UUID, d.Instance.Name, d.Instance.GICapMinor, d.Instance.CICapMinor})
		case kindMIGPartition:
			if partitions[d.GPU.Minor] == nil {
				partitions[d.GPU.Minor] = map[string]bool{}
			}
			partitions[d.GPU.Minor][d.Profile.Name] = true
		case kindGPU:
			full = append(full, fmt.Sprintf("%s partitioned=%v", d.Name, d.Partitioned))
		}
	}
	sortStatic := func(s []static) { slices.SortFunc(s, func(a, b static) int { return strings.Compare(a.name, b.name) }) }
	sortStatic(wantStatic)
	sortStatic(gotStatic)
	if len(wantStatic) == 0 {
		t.Fatal("the mixed-mig state has no compute instances")
	}
	if diff := cmp.Diff(wantStatic, gotStatic, cmp.AllowUnexported(static{})); diff != "" {
		t.Errorf("static MIG devices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu-2 partitioned=true", "gpu-3 partitioned=true", "gpu-4 partitioned=false", "gpu-5 partitioned=false"}, full); diff != "" {
		t.Errorf("full GPUs (-want +got):\n%s", diff)
	}
	table, _ := gpu.LookupMIGTable("H100-80GB-HBM3")
	want := map[string]bool{}
	for _, n := range table.GIProfileNames() {
		want[n] = true
	}
	for _, minor := range []int{2, 3} {
		if diff := cmp.Diff(want, partitions[minor]); diff != "" {
			t.Errorf("GPU %d partition profiles (-want +got):\n%s", minor, diff)
		}
	}
	res, err := buildResources(testNode, inv, publishOptions{DriverName: testDriver})
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, s := range res.Pools[testNode].Slices {
		for _, cs := range s.SharedCounters {
			sets = append(sets, cs.Name)
		}
	}
	if diff := cmp.Diff([]string{"gpu-2-counter-set", "gpu-3-counter-set"}, sets); diff != "" {
		t.Errorf("counter sets (-want +got):\n%s", diff)
	}
}
