package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

func TestFindNVMLLibrary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, root string)
		want    string // relative to root
		wantErr error
	}{
		{
			name: "emulator layout",
			setup: func(t *testing.T, root string) {
				mkdir(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu"))
				writeFile(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.172.08"), "")
				symlink(t, "libnvidia-ml.so.570.172.08", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"))
			},
			want: "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.172.08",
		},
		{
			name: "absolute link stays in the root",
			setup: func(t *testing.T, root string) {
				mkdir(t, filepath.Join(root, "usr/lib64"))
				mkdir(t, filepath.Join(root, "opt/nvidia"))
				writeFile(t, filepath.Join(root, "opt/nvidia/libnvidia-ml.so.550.54.15"), "")
				symlink(t, "/opt/nvidia/libnvidia-ml.so.550.54.15", filepath.Join(root, "usr/lib64/libnvidia-ml.so.1"))
			},
			want: "opt/nvidia/libnvidia-ml.so.550.54.15",
		},
		{
			name: "merged usr with a dotdot link",
			setup: func(t *testing.T, root string) {
				mkdir(t, filepath.Join(root, "usr/lib64"))
				symlink(t, "usr/lib64", filepath.Join(root, "lib64"))
				writeFile(t, filepath.Join(root, "usr/lib64/libnvidia-ml.so.550"), "")
				symlink(t, "../../../../usr/lib64/libnvidia-ml.so.550", filepath.Join(root, "usr/lib64/libnvidia-ml.so.1"))
			},
			want: "usr/lib64/libnvidia-ml.so.550",
		},
		{
			name:    "missing",
			setup:   func(t *testing.T, root string) { mkdir(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu")) },
			wantErr: ErrNVMLNotFound,
		},
		{
			name: "dangling link",
			setup: func(t *testing.T, root string) {
				mkdir(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu"))
				symlink(t, "libnvidia-ml.so.gone", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"))
			},
			wantErr: ErrNVMLNotFound,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			tc.setup(t, root)
			got, err := FindNVMLLibrary(root)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %q, %v; want error %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tc.want); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestSysfsBusID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, wantErr string }{
		{"00000000:1B:00.0", "0000:1b:00.0", ""},
		{"0000:1b:00.0", "0000:1b:00.0", ""},
		{"00000001:9A:00.1", "0001:9a:00.1", ""},
		{"00010000:1B:00.0", "", "not DOMAIN:BB:DD.F"},
		{"1B:00.0", "", "not DOMAIN:BB:DD.F"},
		{"", "", "not DOMAIN:BB:DD.F"},
		{"00000000:1B:00.8", "", "not DOMAIN:BB:DD.F"},
	} {
		got, err := sysfsBusID(tc.in)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("sysfsBusID(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("sysfsBusID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// writeSysfs renders the kernel's layout for one PCI device: the device
// directory under its root complex and the relative bus symlink.
func writeSysfs(t *testing.T, sys, rootComplex, bridge, bdf, numaNode string) {
	t.Helper()
	dev := filepath.Join(sys, "devices", rootComplex, bridge, bdf)
	mkdir(t, dev)
	writeFile(t, filepath.Join(dev, "numa_node"), numaNode+"\n")
	mkdir(t, filepath.Join(sys, "bus/pci/devices"))
	symlink(t, filepath.Join("../../../devices", rootComplex, bridge, bdf), filepath.Join(sys, "bus/pci/devices", bdf))
}

type mockGPU struct {
	uuid, name, busID string
	minor             int
	arch              nvml.DeviceArchitecture
	brand             nvml.BrandType
	memory            uint64
	memRet            nvml.Return
}

func (g mockGPU) device() *mock.Device {
	var pci nvml.PciInfo
	for i, c := range g.busID {
		pci.BusId[i] = int8(c)
	}
	return &mock.Device{
		GetUUIDFunc:                  func() (string, nvml.Return) { return g.uuid, nvml.SUCCESS },
		GetNameFunc:                  func() (string, nvml.Return) { return g.name, nvml.SUCCESS },
		GetMinorNumberFunc:           func() (int, nvml.Return) { return g.minor, nvml.SUCCESS },
		GetMemoryInfoFunc:            func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: g.memory}, g.memRet },
		GetArchitectureFunc:          func() (nvml.DeviceArchitecture, nvml.Return) { return g.arch, nvml.SUCCESS },
		GetBrandFunc:                 func() (nvml.BrandType, nvml.Return) { return g.brand, nvml.SUCCESS },
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) { return 9, 0, nvml.SUCCESS },
		GetPciInfoFunc:               func() (nvml.PciInfo, nvml.Return) { return pci, nvml.SUCCESS },
		GetMigModeFunc:               func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
	}
}

// mockNVML serves gpus and counts Init/Shutdown.
type mockNVML struct {
	*mock.Interface
	inits, shutdowns int
}

func newMockNVML(gpus ...mockGPU) *mockNVML {
	m := &mockNVML{}
	m.Interface = &mock.Interface{
		InitFunc:                       func() nvml.Return { m.inits++; return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { m.shutdowns++; return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "570.172.08", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(gpus) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return gpus[i].device(), nvml.SUCCESS
		},
	}
	return m
}

func h100(minor int, busID string) mockGPU {
	return mockGPU{
		uuid: "GPU-" + strings.Repeat(string(rune('a'+minor)), 8) + "-1111-2222-3333-444444444444", name: "NVIDIA H100 80GB HBM3",
		busID: busID, minor: minor, arch: nvml.DEVICE_ARCH_HOPPER, brand: nvml.BRAND_TESLA, memory: 85520809984, memRet: nvml.SUCCESS,
	}
}

func TestNVMLDiscover(t *testing.T) {
	t.Parallel()
	sys := filepath.Join(t.TempDir(), "sys")
	writeSysfs(t, sys, "pci0000:00", "0000:00:01.0", "0000:1b:00.0", "0")
	writeSysfs(t, sys, "pci0000:80", "0000:80:01.0", "0000:9a:00.0", "-1")
	// The third GPU has no sysfs entry at all; the fourth is lost
	// (left out).
	noMemory := h100(2, "00000000:C1:00.0")
	noMemory.memRet = nvml.ERROR_NOT_SUPPORTED
	lost := h100(3, "00000000:C2:00.0")
	lost.memRet = nvml.ERROR_GPU_IS_LOST
	lib := newMockNVML(h100(0, "00000000:1B:00.0"), h100(1, "00000000:9A:00.0"), noMemory, lost)

	got, err := (&NVMLDiscoverer{NVML: lib, SysfsRoot: sys, fabricOf: noFabric}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(index int, uuid, busID, root string, numa int, mem uint64) GPU {
		return GPU{Index: index, Minor: index, UUID: uuid, ProductName: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", Brand: "Tesla",
			CCMajor: 9, CCMinor: 0, MemoryBytes: mem, PCIBusID: busID, PCIeRoot: root, NUMANode: numa}
	}
	want := &Inventory{DriverVersion: "570.172.08", CUDADriverVersion: 12080, GPUs: []GPU{
		gpu(0, "GPU-aaaaaaaa-1111-2222-3333-444444444444", "0000:1b:00.0", "pci0000:00", 0, 85520809984),
		gpu(1, "GPU-bbbbbbbb-1111-2222-3333-444444444444", "0000:9a:00.0", "pci0000:80", -1, 85520809984),
		gpu(2, "GPU-cccccccc-1111-2222-3333-444444444444", "0000:c1:00.0", "", -1, 0),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if lib.inits != 1 || lib.shutdowns != 1 {
		t.Errorf("NVML Init called %d times, Shutdown %d times; want 1 and 1", lib.inits, lib.shutdowns)
	}
}

func TestNVMLDiscoverErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		lib     func() *mockNVML
		wantErr string
	}{
		{"init fails", func() *mockNVML {
			m := newMockNVML()
			m.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
			return m
		}, "initialize NVML"},
		{"unknown architecture", func() *mockNVML {
			g := h100(0, "00000000:1B:00.0")
			g.arch = 42
			return newMockNVML(g)
		}, "GPU 0 (GPU-aaaaaaaa-1111-2222-3333-444444444444): unknown NVML architecture 42"},
		{"unknown brand", func() *mockNVML {
			g := h100(0, "00000000:1B:00.0")
			g.brand = 99
			return newMockNVML(g)
		}, "unknown NVML brand 99"},
		{"bad bus id", func() *mockNVML { return newMockNVML(h100(0, "garbage")) }, `PCI bus id "garbage"`},
		{"memory error", func() *mockNVML {
			g := h100(0, "00000000:1B:00.0")
			g.memRet = nvml.ERROR_UNKNOWN
			return newMockNVML(g)
		}, "get memory of GPU 0"},
		{"duplicate minor", func() *mockNVML { return newMockNVML(h100(0, "00000000:1B:00.0"), h100(0, "00000000:1C:00.0")) }, "two GPUs have minor 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lib := tc.lib()
			_, err := (&NVMLDiscoverer{NVML: lib, SysfsRoot: t.TempDir(), fabricOf: noFabric}).Discover(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if lib.inits == 1 && lib.shutdowns != 1 {
				t.Errorf("NVML was initialized but shut down %d times", lib.shutdowns)
			}
		})
	}
}
