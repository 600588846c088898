//go:build cgo

package probe

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// TestCollectMIGThroughShim runs the probe's NVML code against drakit's
// NVML shim: the MIG devices it reports are exactly the compute instances
// of the state, with the UUIDs, GI/CI ids and memory the emulator derives.
// Not parallel: the process keeps the first NVML library it loads.
func TestCollectMIGThroughShim(t *testing.T) {
	s := nvmltest.MIGSampleState()
	root := nvmltest.NewMIGRoot(t, s)
	t.Setenv(nvmltest.RootEnv, root)
	got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: []string{}, NVML: NewNVML(nvmltest.BuildShim(t))})
	if err != nil {
		t.Fatal(err)
	}
	if got.NVML.Error != "" {
		t.Fatalf("NVML error: %s", got.NVML.Error)
	}
	if len(got.NVML.GPUs) != len(s.GPUs) {
		t.Fatalf("probe saw %d GPUs, state has %d", len(got.NVML.GPUs), len(s.GPUs))
	}
	giMemory := map[int]uint64{} // GI profile ID -> bytes, on GPU 1
	for _, p := range s.GIProfiles {
		if p.GPU == 1 {
			giMemory[p.ID] = uint64(p.MemoryMB) << 20
		}
	}
	var want []MIGDevice
	for _, g := range s.GPUInstances {
		for _, c := range s.ComputeInstances {
			if c.GPU != g.GPU || c.GI != g.ID {
				continue
			}
			want = append(want, MIGDevice{
				UUID: c.UUID, GPUInstance: g.ID, ComputeInstance: c.ID, MemoryTotal: giMemory[g.Profile],
			})
		}
	}
	byMinor := map[int]GPU{}
	for _, g := range got.NVML.GPUs {
		byMinor[g.Minor] = g
	}
	if !byMinor[0].MIGEnabled || len(byMinor[0].MIGDevices) != 0 {
		t.Errorf("GPU 0: MIG enabled %v with %d MIG devices, want enabled with none", byMinor[0].MIGEnabled, len(byMinor[0].MIGDevices))
	}
	if byMinor[2].MIGEnabled || byMinor[2].MIGDevices != nil {
		t.Errorf("GPU 2 (not MIG capable): MIG enabled %v, MIG devices %v", byMinor[2].MIGEnabled, byMinor[2].MIGDevices)
	}
	gpu1 := byMinor[1]
	if !gpu1.MIGEnabled {
		t.Fatal("GPU 1: MIG mode not enabled")
	}
	names := make([]string, len(gpu1.MIGDevices))
	for i := range gpu1.MIGDevices {
		names[i] = gpu1.MIGDevices[i].Name
		gpu1.MIGDevices[i].Name = ""
	}
	if diff := cmp.Diff(want, gpu1.MIGDevices, cmpSortMIG); diff != "" {
		t.Errorf("GPU 1 MIG devices (-want +got):\n%s", diff)
	}
	wantNames := []string{gpu1.Name + " MIG 2c.3g.40gb", gpu1.Name + " MIG 1c.3g.40gb", gpu1.Name + " MIG 1g.10gb"}
	if diff := cmp.Diff(wantNames, names, cmpSortStrings); diff != "" {
		t.Errorf("GPU 1 MIG device names (-want +got):\n%s", diff)
	}
}

var (
	cmpSortMIG     = cmpopts.SortSlices(func(a, b MIGDevice) bool { return a.UUID < b.UUID })
	cmpSortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })
)

// TestCollectCliqueThroughShim: the probe reports the clique NVML gives a
// GPU of a completed fabric, and none for a GPU without fabric info or
// whose registration is still in progress. Not parallel (see above).
func TestCollectCliqueThroughShim(t *testing.T) {
	s := nvmltest.SampleState()
	const domain = "6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11"
	s.Fabrics = []nvmlstate.Fabric{
		{GPU: 0, ClusterUUID: domain, CliqueID: 7, State: nvmlstate.FabricCompleted},
		{GPU: 1, ClusterUUID: domain, CliqueID: 7, State: nvmlstate.FabricInProgress},
	}
	t.Setenv(nvmltest.RootEnv, nvmltest.NewRoot(t, s))
	got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: []string{}, NVML: NewNVML(nvmltest.BuildShim(t))})
	if err != nil {
		t.Fatal(err)
	}
	if got.NVML.Error != "" {
		t.Fatalf("NVML error: %s", got.NVML.Error)
	}
	cliques := map[int]string{}
	for _, g := range got.NVML.GPUs {
		cliques[g.Minor] = g.Clique
	}
	if diff := cmp.Diff(map[int]string{0: domain + ".7", 1: "", 3: ""}, cliques); diff != "" {
		t.Errorf("cliques by minor (-want +got):\n%s", diff)
	}
}
