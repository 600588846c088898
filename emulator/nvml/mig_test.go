package nvml_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// migDevice is what NVML reports about one MIG device.
type migDevice struct {
	UUID, Name   string
	GI, CI       int
	MemoryMiB    uint64
	Attributes   gonvml.DeviceAttributes
	ParentMinor  int
	ByUUIDEquals bool
}

// observeMIG walks a GPU's MIG device slots as go-nvlib does.
func observeMIG(t *testing.T, lib gonvml.Interface, gpu gonvml.Device) []migDevice {
	t.Helper()
	max, ret := gpu.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetMaxMigDeviceCount: %v", ret)
	}
	var out []migDevice
	for i := 0; i < max; i++ {
		m, ret := gpu.GetMigDeviceHandleByIndex(i)
		if ret == gonvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != gonvml.SUCCESS {
			t.Fatalf("GetMigDeviceHandleByIndex(%d): %v", i, ret)
		}
		var d migDevice
		var r [8]gonvml.Return
		d.UUID, r[0] = m.GetUUID()
		d.Name, r[1] = m.GetName()
		d.GI, r[2] = m.GetGpuInstanceId()
		d.CI, r[3] = m.GetComputeInstanceId()
		mem, r4 := m.GetMemoryInfo()
		r[4], d.MemoryMiB = r4, mem.Total>>20
		d.Attributes, r[5] = m.GetAttributes()
		parent, r6 := m.GetDeviceHandleFromMigDeviceHandle()
		r[6] = r6
		d.ParentMinor, r[7] = parent.GetMinorNumber()
		for k, rr := range r {
			if rr != gonvml.SUCCESS {
				t.Errorf("MIG device %d: call %d: %v", i, k, rr)
			}
		}
		if is, ret := m.IsMigDeviceHandle(); !is || ret != gonvml.SUCCESS {
			t.Errorf("MIG device %d: IsMigDeviceHandle = %v, %v", i, is, ret)
		}
		byUUID, ret := lib.DeviceGetHandleByUUID(d.UUID)
		d.ByUUIDEquals = ret == gonvml.SUCCESS && byUUID == m
		out = append(out, d)
	}
	if _, ret := gpu.GetMigDeviceHandleByIndex(max); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("GetMigDeviceHandleByIndex(%d) = %v, want INVALID_ARGUMENT", max, ret)
	}
	return out
}

func TestMIGDevices(t *testing.T) {
	s := nvmltest.MIGSampleState()
	lib := newLib(t)
	root := nvmltest.NewMIGRoot(t, s)
	initLib(t, lib, root)
	gpu1, ret := lib.DeviceGetHandleByIndex(1)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	// H100 3g.40gb: 60 SMs, 3 CEs, 3 decoders, 3 JPEGs; 1g.10gb 16 SMs.
	attr3g := func(sms, slices uint32) gonvml.DeviceAttributes {
		return gonvml.DeviceAttributes{MultiprocessorCount: sms, SharedCopyEngineCount: 3, SharedDecoderCount: 3,
			SharedJpegCount: 3, GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: slices, MemorySizeMB: 40448}
	}
	want := []migDevice{
		{UUID: s.ComputeInstances[0].UUID, Name: "NVIDIA H100 80GB HBM3 MIG 2c.3g.40gb", GI: 1, CI: 0,
			MemoryMiB: 40448, Attributes: attr3g(32, 2), ParentMinor: 1, ByUUIDEquals: true},
		{UUID: s.ComputeInstances[1].UUID, Name: "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", GI: 1, CI: 1,
			MemoryMiB: 40448, Attributes: attr3g(16, 1), ParentMinor: 1, ByUUIDEquals: true},
		{UUID: s.ComputeInstances[2].UUID, Name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", GI: 13, CI: 0,
			MemoryMiB: 9984, ParentMinor: 1, ByUUIDEquals: true, Attributes: gonvml.DeviceAttributes{
				MultiprocessorCount: 16, SharedCopyEngineCount: 1, SharedDecoderCount: 1, SharedJpegCount: 1,
				GpuInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 9984}},
	}
	if diff := cmp.Diff(want, observeMIG(t, lib, gpu1)); diff != "" {
		t.Errorf("MIG devices (-want +got):\n%s", diff)
	}
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	if got := observeMIG(t, lib, gpu0); len(got) != 0 {
		t.Errorf("GPU 0 has MIG devices %v, want none", got)
	}
	l4, _ := lib.DeviceGetHandleByIndex(2)
	if n, ret := l4.GetMaxMigDeviceCount(); n != 0 || ret != gonvml.SUCCESS {
		t.Errorf("L4 GetMaxMigDeviceCount = %d, %v; want 0, SUCCESS", n, ret)
	}
	if _, ret := l4.GetMigDeviceHandleByIndex(0); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("L4 GetMigDeviceHandleByIndex = %v, want NOT_SUPPORTED", ret)
	}
	m, _ := gpu1.GetMigDeviceHandleByIndex(0)
	if _, ret := m.GetMinorNumber(); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetMinorNumber on a MIG device = %v, want NOT_SUPPORTED", ret)
	}
	if _, ret := gpu1.GetGpuInstanceId(); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetGpuInstanceId on a GPU = %v, want NOT_SUPPORTED", ret)
	}
	if _, ret := lib.DeviceGetHandleByUUID("MIG-00000000-0000-0000-0000-000000000000"); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("unknown MIG UUID: %v, want NOT_FOUND", ret)
	}
}

func TestMIGProfilesAndInstances(t *testing.T) {
	s := nvmltest.MIGSampleState()
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewMIGRoot(t, s))
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	l4, _ := lib.DeviceGetHandleByIndex(2)

	info, ret := gpu1.GetGpuInstanceProfileInfo(gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	wantInfo := gonvml.GpuInstanceProfileInfo{Id: 19, SliceCount: 1, InstanceCount: 7, MultiprocessorCount: 16,
		CopyEngineCount: 1, DecoderCount: 1, JpegCount: 1, MemorySizeMB: 9984}
	if ret != gonvml.SUCCESS || info != wantInfo {
		t.Errorf("GetGpuInstanceProfileInfo(1_SLICE) = %+v, %v; want %+v", info, ret, wantInfo)
	}
	v2, ret := gpu1.GetGpuInstanceProfileInfoV(gonvml.GPU_INSTANCE_PROFILE_3_SLICE).V2()
	if ret != gonvml.SUCCESS || v2.Id != 9 || cBytes(v2.Name[:]) != "3g.40gb" || v2.SliceCount != 3 {
		t.Errorf("GetGpuInstanceProfileInfoV(3_SLICE).V2 = id %d name %q, %v; want 9 3g.40gb", v2.Id, cBytes(v2.Name[:]), ret)
	}
	for _, tc := range []struct {
		name    string
		dev     gonvml.Device
		profile int
		want    gonvml.Return
	}{
		{"index without a profile", gpu1, gonvml.GPU_INSTANCE_PROFILE_6_SLICE, gonvml.ERROR_NOT_SUPPORTED},
		{"index past the count", gpu1, gonvml.GPU_INSTANCE_PROFILE_COUNT, gonvml.ERROR_INVALID_ARGUMENT},
		{"GPU without MIG", l4, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.ERROR_NOT_SUPPORTED},
	} {
		if _, ret := tc.dev.GetGpuInstanceProfileInfo(tc.profile); ret != tc.want {
			t.Errorf("%s: GetGpuInstanceProfileInfo = %v, want %v", tc.name, ret, tc.want)
		}
	}

	info3g, _ := gpu1.GetGpuInstanceProfileInfo(gonvml.GPU_INSTANCE_PROFILE_3_SLICE)
	placements, ret := gpu1.GetGpuInstancePossiblePlacements(&info3g)
	if diff := cmp.Diff([]gonvml.GpuInstancePlacement{{Start: 0, Size: 4}, {Start: 4, Size: 4}}, placements); ret != gonvml.SUCCESS || diff != "" {
		t.Errorf("GetGpuInstancePossiblePlacements(3g): %v (-want +got):\n%s", ret, diff)
	}
	bogus := gonvml.GpuInstanceProfileInfo{Id: 99}
	if _, ret := gpu1.GetGpuInstancePossiblePlacements(&bogus); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("placements of profile ID 99: %v, want INVALID_ARGUMENT", ret)
	}
	// 1g: a 3g at 4:4 and a 1g at 2 leave 1g placements 0, 1 and 3.
	if n, ret := gpu1.GetGpuInstanceRemainingCapacity(&info); n != 3 || ret != gonvml.SUCCESS {
		t.Errorf("GetGpuInstanceRemainingCapacity(1g) = %d, %v; want 3", n, ret)
	}

	gis, ret := gpu1.GetGpuInstances(&info3g)
	if ret != gonvml.SUCCESS || len(gis) != 1 {
		t.Fatalf("GetGpuInstances(3g) = %d instances, %v; want 1", len(gis), ret)
	}
	giInfo, ret := gis[0].GetInfo()
	wantGI := gonvml.GpuInstanceInfo{Device: gpu1, Id: 1, ProfileId: 9, Placement: gonvml.GpuInstancePlacement{Start: 4, Size: 4}}
	if ret != gonvml.SUCCESS || giInfo != wantGI {
		t.Errorf("GpuInstance GetInfo = %+v, %v; want %+v", giInfo, ret, wantGI)
	}
	if byID, ret := gpu1.GetGpuInstanceById(1); ret != gonvml.SUCCESS || byID != gis[0] {
		t.Errorf("GetGpuInstanceById(1) = %v, %v; want the handle GetGpuInstances returned", byID, ret)
	}
	if _, ret := gpu1.GetGpuInstanceById(2); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("GetGpuInstanceById(2) = %v, want NOT_FOUND", ret)
	}

	ci1c, ret := gis[0].GetComputeInstanceProfileInfo(gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	wantCI := gonvml.ComputeInstanceProfileInfo{Id: 0, SliceCount: 1, InstanceCount: 3, MultiprocessorCount: 16,
		SharedCopyEngineCount: 3, SharedDecoderCount: 3, SharedJpegCount: 3}
	if ret != gonvml.SUCCESS || ci1c != wantCI {
		t.Errorf("GetComputeInstanceProfileInfo(1 slice) = %+v, %v; want %+v", ci1c, ret, wantCI)
	}
	if _, ret := gis[0].GetComputeInstanceProfileInfo(gonvml.COMPUTE_INSTANCE_PROFILE_4_SLICE, 0); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("4-slice CI profile in a 3g GI: %v, want NOT_SUPPORTED", ret)
	}
	ciPlacements, ret := gis[0].GetComputeInstancePossiblePlacements(&ci1c)
	if len(ciPlacements) != 3 || ret != gonvml.SUCCESS {
		t.Errorf("1c placements in 3g: %v, %v; want 3", ciPlacements, ret)
	}
	// The 2c CI at 0 and the 1c CI at 2 fill the 3g GI.
	if n, ret := gis[0].GetComputeInstanceRemainingCapacity(&ci1c); n != 0 || ret != gonvml.SUCCESS {
		t.Errorf("1c remaining capacity = %d, %v; want 0", n, ret)
	}
	cis, ret := gis[0].GetComputeInstances(&ci1c)
	if ret != gonvml.SUCCESS || len(cis) != 1 {
		t.Fatalf("GetComputeInstances(1c) = %d, %v; want 1", len(cis), ret)
	}
	ciInfo, ret := cis[0].GetInfo()
	mig, _ := gpu1.GetMigDeviceHandleByIndex(1)
	wantInfoCI := gonvml.ComputeInstanceInfo{Device: mig, GpuInstance: gis[0], Id: 1, ProfileId: 0,
		Placement: gonvml.ComputeInstancePlacement{Start: 2, Size: 1}}
	if ret != gonvml.SUCCESS || ciInfo != wantInfoCI {
		t.Errorf("ComputeInstance GetInfo = %+v, %v; want %+v", ciInfo, ret, wantInfoCI)
	}
	if byID, ret := gis[0].GetComputeInstanceById(1); ret != gonvml.SUCCESS || byID != cis[0] {
		t.Errorf("GetComputeInstanceById(1) = %v, %v", byID, ret)
	}
}

func TestMIGVisibilityAndReread(t *testing.T) {
	s := nvmltest.MIGSampleState()
	lib := newLib(t)
	root := nvmltest.NewMIGRoot(t, s)
	// Without its cap node the 1c CI (gi 1, ci 1) is not a device here, as in
	// a container that was not given it.
	if err := os.Remove(filepath.Join(root, "dev/nvidia-caps/nvidia-cap149")); err != nil {
		t.Fatal(err)
	}
	initLib(t, lib, root)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	var uuids []string
	for _, d := range observeMIG(t, lib, gpu1) {
		uuids = append(uuids, d.UUID)
	}
	if diff := cmp.Diff([]string{s.ComputeInstances[0].UUID, s.ComputeInstances[2].UUID}, uuids); diff != "" {
		t.Errorf("visible MIG devices (-want +got):\n%s", diff)
	}
	first, _ := gpu1.GetMigDeviceHandleByIndex(0)

	// Another process replaces the state file: a new 1g GI (id 11, start 0)
	// with its CI appears; the handles from before stay valid.
	next := nvmltest.MIGSampleState()
	nvmltest.AddInstance(next, 1, 11, 19, 0, [2]int{0, 0})
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, next); err != nil {
		t.Fatal(err)
	}
	nvmltest.CreateCapNode(t, root, nvmlstate.GIAccessMinor(1, 11))
	nvmltest.CreateCapNode(t, root, nvmlstate.CIAccessMinor(1, 11, 0))
	statePath := filepath.Join(root, nvmlstate.RelativePath)
	if err := os.WriteFile(statePath+".tmp", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(statePath+".tmp", statePath); err != nil {
		t.Fatal(err)
	}
	if err := nvmlstate.BumpGeneration(root); err != nil {
		t.Fatal(err)
	}
	uuids = nil
	for _, d := range observeMIG(t, lib, gpu1) {
		uuids = append(uuids, d.UUID)
	}
	newUUID := next.ComputeInstances[len(next.ComputeInstances)-1].UUID
	if diff := cmp.Diff([]string{s.ComputeInstances[0].UUID, newUUID, s.ComputeInstances[2].UUID}, uuids); diff != "" {
		t.Errorf("MIG devices after another process's change (-want +got):\n%s", diff)
	}
	if u, ret := first.GetUUID(); ret != gonvml.SUCCESS || u != s.ComputeInstances[0].UUID {
		t.Errorf("old handle: GetUUID = %q, %v", u, ret)
	}
}

func TestCapMinorFormula(t *testing.T) {
	// The values emulation-surfaces.md §2.1 quotes from the NVIDIA driver's
	// mig-minors: gpu3/gi3/ci3 = 439, gpu6/gi11/ci7 = 920; and the sample
	// state's (validated by the shim, which recomputes them).
	for _, tc := range []struct{ gpu, gi, ci, want int }{{3, 3, 3, 439}, {6, 11, 7, 920}, {0, 0, 0, 4}} {
		if got := nvmlstate.CIAccessMinor(tc.gpu, tc.gi, tc.ci); got != tc.want {
			t.Errorf("CIAccessMinor(%d, %d, %d) = %d, want %d", tc.gpu, tc.gi, tc.ci, got, tc.want)
		}
	}
	good := nvmltest.MIGSampleState()
	bad := nvmltest.MIGSampleState()
	bad.ComputeInstances[0].CapMinor++
	lib := newLib(t)
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, good); err != nil {
		t.Fatal(err)
	}
	data := bytes.Replace(b.Bytes(), []byte("capMinor=148"), []byte("capMinor=149"), 1)
	root := nvmltest.NewMIGRoot(t, good)
	nvmltest.WriteStateFile(t, root, data)
	t.Setenv(nvmltest.RootEnv, root)
	if ret := lib.Init(); ret != gonvml.ERROR_UNKNOWN {
		t.Errorf("Init with a wrong CI capMinor = %v, want ERROR_UNKNOWN", ret)
		if ret == gonvml.SUCCESS {
			lib.Shutdown()
		}
	}
	if bad.Validate() == nil {
		t.Error("nvmlstate accepts a wrong CI capMinor")
	}
}
