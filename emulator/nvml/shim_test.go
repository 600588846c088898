package nvml_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

func all(int) bool { return true }

func TestEnumerationMatchesState(t *testing.T) {
	mig := nvmltest.SampleState()
	mig.GPUs[1].MIGMode = 1
	oddNames := nvmltest.SampleState()
	oddNames.GPUs[0].Name = strings.Repeat("N", 95) // the longest name NVML's 96-byte buffer holds
	oddNames.GPUs[1].NUMANode = 7
	oddNames.GPUs[2].BusID = "FFFFFFFF:FF:FF.7" // legacy bus id cannot hold this domain
	longVersion := nvmltest.SampleState()
	longVersion.System.DriverVersion = "570." + strings.Repeat("1", 75) // 79 bytes: NVML's 80-byte buffer exactly
	tests := []struct {
		name  string
		state *nvmlstate.State
	}{
		{"sample", nvmltest.SampleState()},
		{"MIG enabled on one GPU", mig},
		{"edge values", oddNames},
		{"driver version as long as NVML's buffer allows", longVersion},
		{"no GPUs", &nvmlstate.State{System: nvmltest.SampleState().System}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := newLib(t)
			initLib(t, lib, nvmltest.NewRoot(t, tt.state))
			wantSys, wantGPUs := wantView(tt.state, all)
			gotSys, gotGPUs := observeView(t, lib)
			if diff := cmp.Diff(wantSys, gotSys); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantGPUs, gotGPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSampleValues(t *testing.T) {
	// Spot-check the view machinery itself against literal values.
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewRoot(t, nvmltest.SampleState()))
	sys, gpus := observeView(t, lib)
	if sys.DriverVersion != "570.172.08" || sys.CUDA != 12080 || sys.Count != 3 {
		t.Errorf("system = %+v, want driver 570.172.08, CUDA 12080, 3 GPUs", sys)
	}
	want := []struct {
		name, busID, legacy string
		minor               int
		migRet              gonvml.Return
	}{
		{"NVIDIA H100 80GB HBM3", "00000000:1B:00.0", "0000:1B:00.0", 0, gonvml.SUCCESS},
		{"NVIDIA H100 80GB HBM3", "00000000:43:00.0", "0000:43:00.0", 1, gonvml.SUCCESS},
		{"NVIDIA L4", "00000001:C1:1F.7", "0001:C1:1F.7", 3, gonvml.ERROR_NOT_SUPPORTED},
	}
	for i, w := range want {
		g := gpus[i]
		if g.Name != w.name || g.BusID != w.busID || g.Legacy != w.legacy || g.Minor != w.minor || g.MIGRet != w.migRet {
			t.Errorf("GPU %d = %q %s %s minor %d MIG %v; want %q %s %s minor %d MIG %v",
				i, g.Name, g.BusID, g.Legacy, g.Minor, g.MIGRet, w.name, w.busID, w.legacy, w.minor, w.migRet)
		}
	}
	if m := gpus[0].MemoryV2; m.Free+m.Reserved+m.Used != m.Total || m.Reserved != 566231040 {
		t.Errorf("MemoryInfo_v2 = %+v: want reserved 566231040 and total = free + reserved + used", m)
	}
}

func TestPCIBusIDFormats(t *testing.T) {
	// go-nvlib lower-cases NVML's bus id and trims "0000"; DRA's
	// deviceattribute then requires this form (and sysfs names devices so).
	bdf := regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$`)
	nvmlForm := regexp.MustCompile(`^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$`)
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewRoot(t, nvmltest.SampleState()))
	_, gpus := observeView(t, lib)
	want := []string{"0000:1b:00.0", "0000:43:00.0", "0001:c1:1f.7"}
	for i, g := range gpus {
		if !nvmlForm.MatchString(g.BusID) {
			t.Errorf("GPU %d busId %q is not NVML's DDDDDDDD:BB:DD.F", i, g.BusID)
		}
		got := goNVLibBusID(g.BusID)
		if !bdf.MatchString(got) || got != want[i] {
			t.Errorf("GPU %d: go-nvlib form %q, want %q matching %s", i, got, want[i], bdf)
		}
	}
}

func TestVisibilityFollowsDeviceNodes(t *testing.T) {
	s := nvmltest.SampleState()
	tests := []struct {
		name    string
		remove  []int // minors whose device node is removed
		wantIDs []string
	}{
		{"all nodes", nil, []string{s.GPUs[0].UUID, s.GPUs[1].UUID, s.GPUs[2].UUID}},
		{"middle node gone", []int{1}, []string{s.GPUs[0].UUID, s.GPUs[2].UUID}},
		{"first node gone", []int{0}, []string{s.GPUs[1].UUID, s.GPUs[2].UUID}},
		{"no nodes", []int{0, 1, 3}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := nvmltest.NewRoot(t, s)
			gone := map[int]bool{}
			for _, m := range tt.remove {
				gone[m] = true
				if err := os.Remove(nvmltest.DeviceNode(root, m)); err != nil {
					t.Fatal(err)
				}
			}
			lib := newLib(t)
			initLib(t, lib, root)
			wantSys, wantGPUs := wantView(s, func(minor int) bool { return !gone[minor] })
			gotSys, gotGPUs := observeView(t, lib)
			var gotIDs []string
			for i, g := range gotGPUs {
				gotIDs = append(gotIDs, g.UUID)
				if g.Index != i {
					t.Errorf("GPU %s has index %d, want %d (renumbered in file order)", g.UUID, g.Index, i)
				}
			}
			if diff := cmp.Diff(tt.wantIDs, gotIDs); diff != "" {
				t.Errorf("visible GPUs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantSys, gotSys); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantGPUs, gotGPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			// A hidden GPU is not reachable by UUID or bus id either.
			for _, g := range s.GPUs {
				if !gone[g.Minor] {
					continue
				}
				if _, ret := lib.DeviceGetHandleByUUID(g.UUID); ret != gonvml.ERROR_NOT_FOUND {
					t.Errorf("DeviceGetHandleByUUID(hidden %s) = %v, want ERROR_NOT_FOUND", g.UUID, ret)
				}
				if _, ret := lib.DeviceGetHandleByPciBusId(g.BusID); ret != gonvml.ERROR_NOT_FOUND {
					t.Errorf("DeviceGetHandleByPciBusId(hidden %s) = %v, want ERROR_NOT_FOUND", g.BusID, ret)
				}
			}
		})
	}
}

func TestInitShutdownRefcount(t *testing.T) {
	s := nvmltest.SampleState()
	t.Setenv(nvmltest.RootEnv, nvmltest.NewRoot(t, s))
	// Two go-nvml instances share the one loaded shim, as two libraries in
	// one driver process do; each keeps its own count, the shim counts both.
	a, b := newLib(t), newLib(t)
	steps := []struct {
		name string
		do   func() gonvml.Return
		want gonvml.Return
	}{
		{"a.Init", a.Init, gonvml.SUCCESS},
		{"b.InitWithFlags(NO_GPUS)", func() gonvml.Return { return b.InitWithFlags(gonvml.INIT_FLAG_NO_GPUS) }, gonvml.SUCCESS},
		{"a.Init again", a.Init, gonvml.SUCCESS},
		{"a.Shutdown", a.Shutdown, gonvml.SUCCESS},
		{"a.Shutdown again", a.Shutdown, gonvml.SUCCESS},
		{"b still initialised", func() gonvml.Return { _, r := b.DeviceGetCount(); return r }, gonvml.SUCCESS},
		{"b.Shutdown", b.Shutdown, gonvml.SUCCESS},
		// go-nvml has closed b; the shim stays mapped (its symbols are bound)
		// and answers for itself.
		{"shim uninitialised", func() gonvml.Return { _, r := b.DeviceGetCount(); return r }, gonvml.ERROR_UNINITIALIZED},
	}
	for _, st := range steps {
		if got := st.do(); got != st.want {
			t.Fatalf("%s = %v, want %v", st.name, got, st.want)
		}
	}
}
