package nvml_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// TestNvidiaSMIOnRenderedProfiles renders every built-in profile with the
// shim (and so nvidia-smi, from beside it) and checks what
// R/usr/bin/nvidia-smi reports against the profile: GPUs in PCI order with
// their UUIDs, names, bus ids, memory and MIG mode, and the MIG devices of
// the static layouts as the rendered state has them.
func TestNvidiaSMIOnRenderedProfiles(t *testing.T) {
	requireMknod(t)
	shim := nvmltest.BuildShim(t)
	for _, name := range profile.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			p, err := profile.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(t.TempDir(), "node")
			if err := render.Render(context.Background(), p, render.Options{Root: root, ShimLibrary: shim}); err != nil {
				t.Fatal(err)
			}
			topo, err := p.Topology()
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.GPUs) == 0 {
				// A node without GPUs (a TPU host) renders no nvidia-smi state to
				// compare: nvidia-smi says so, as on a real node.
				r := runSMI(t, filepath.Join(root, render.NvidiaSMIPath), nil, nil, "-L")
				if r.code == 0 || !strings.Contains(r.stdout, "No devices were found") {
					t.Errorf("nvidia-smi -L on a node without GPUs: %v, want a non-zero exit and \"No devices were found\"", r)
				}
				return
			}
			smi := filepath.Join(root, render.NvidiaSMIPath)
			if len(topo.GPUs) == 0 {
				// A node without NVIDIA GPUs (a TPU host): nvidia-smi says
				// so and exits with NVML_ERROR_NOT_FOUND, as the real one does.
				if r := runSMI(t, smi, nil, nil, "-L"); r.code != 6 || r.stdout != "No devices were found\n" {
					t.Errorf("-L on a node without GPUs: %v, want exit 6 with \"No devices were found\"", r)
				}
				return
			}
			want := ""
			for i, pg := range topo.GPUs {
				g := pg.GPU
				mig := "[N/A]"
				if *g.MIGCapable {
					mig = "Disabled"
					if g.MIG != nil && g.MIG.Mode == gpu.MIGEnabled {
						mig = "Enabled"
					}
				}
				want += fmt.Sprintf("%d, %s, %s, %s, %d, %s\n", i, g.UUID, g.Name, pg.Function.Address.NVMLBusID(), g.Memory.Value()>>20, mig)
			}
			r := runSMI(t, smi, nil, nil, "--query-gpu=index,uuid,name,pci.bus_id,memory.total,mig.mode.current", "--format=csv,noheader,nounits")
			if r.code != 0 || r.stdout != want {
				t.Errorf("--query-gpu against the profile (-want +got):\n%s%v", cmp.Diff(want, r.stdout), r)
			}
			state, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
			if err != nil {
				t.Fatal(err)
			}
			r = runSMI(t, smi, nil, nil, "-L")
			if want := nvmltest.NvidiaSMIList(state); r.code != 0 || r.stdout != want {
				t.Errorf("-L (-want +got):\n%s%v", cmp.Diff(want, r.stdout), r)
			}
			if len(state.ComputeInstances) > 0 && !strings.Contains(r.stdout, "  MIG ") {
				t.Errorf("-L shows no MIG device of the static layout: %v", r)
			}
			for _, c := range state.ComputeInstances {
				g := state.GPUs[slices.IndexFunc(state.GPUs, func(g nvmlstate.GPU) bool { return g.Minor == c.GPU })]
				if want := gpu.DeriveMIGUUID(g.UUID, c.GI, c.ID); c.UUID != want || !strings.Contains(r.stdout, "(UUID: "+want+")") {
					t.Errorf("MIG device gpu%d/gi%d/ci%d: state %s, -L %q; want %s", c.GPU, c.GI, c.ID, c.UUID, r.stdout, want)
				}
			}
			r = runSMI(t, smi, nil, nil, "--version")
			d := p.Spec.Driver
			if want := fmt.Sprintf("DRIVER version      : %s\nCUDA Version        : %d.%d\n", d.DriverVersion, d.CUDADriverVersion/1000, d.CUDADriverVersion%1000/10); r.code != 0 || !strings.HasSuffix(r.stdout, want) {
				t.Errorf("--version: %v\nwant it to end with %q", r, want)
			}
		})
	}
}
