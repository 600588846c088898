package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// TestDiscoverEmulatedDGXH100 runs the real discovery path, go-nvml over the
// emulator's NVML shim plus deviceattribute over the rendered sysfs, against
// a rendered dgx-h100 root. A process binds one NVML library for good, so
// this is the only test that loads a real library.
func TestDiscoverEmulatedDGXH100(t *testing.T) {
	// Not parallel: it changes the environment. An empty root variable makes
	// the shim derive its root from its own path, as in production.
	t.Setenv(nvmltest.RootEnv, "")
	shim := nvmltest.BuildShim(t)
	p, err := profile.Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "emulator")
	if err := render.Render(t.Context(), p, render.Options{Root: root, ShimLibrary: shim}); err != nil {
		if errors.Is(err, render.ErrDeviceNodes) {
			t.Skipf("rendering needs CAP_MKNOD: %v", err)
		}
		t.Fatal(err)
	}

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
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	state, err := nvmlstate.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want := &Inventory{DriverVersion: "570.172.08", CUDADriverVersion: 12080}
	for i, g := range state.GPUs {
		bdf, err := sysfsBusID(g.BusID)
		if err != nil {
			t.Fatal(err)
		}
		brand, err := brandName(gonvml.BrandType(g.Brand))
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
