package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// fakeMIG is a small stateful NVML with real MIG semantics for the calls the
// driver makes: H100 profile table with real profile IDs (emulator/gpu),
// GI ids by placement (gpu.GIID), overlapping placements refused with
// INSUFFICIENT_RESOURCES, a busy GI refused with IN_USE, handles of
// destroyed instances answering NOT_FOUND, capability nodes created below
// root/dev/nvidia-caps and the mig-minors table at MIGMinorsPath(root).
type fakeMIG struct {
	*mock.Interface
	root string

	mu                    sync.Mutex
	gpus                  []*fakeMIGGPU
	inits, shutdowns      int
	giCreates, ciCreates  int
	giDestroys, ciDestroy int
}

type fakeMIGGPU struct {
	mockGPU
	migMode int
	table   *gpu.MIGTable
	gis     map[int]*fakeGI
}

type fakeGI struct {
	id, profileID, start, size, slices int
	cis                                map[int]string // CI id → MIG UUID
}

func newFakeMIG(t *testing.T, root string, gpus ...*fakeMIGGPU) *fakeMIG {
	t.Helper()
	table, ok := gpu.LookupMIGTable("H100-80GB-HBM3")
	if !ok {
		t.Fatal("no H100 MIG table")
	}
	var minors strings.Builder
	fmt.Fprintf(&minors, "config 1\nmonitor 2\n")
	for _, g := range gpus {
		g.table, g.gis = table, map[int]*fakeGI{}
		for gi := range nvmlstate.MaxGIID + 1 {
			fmt.Fprintf(&minors, "gpu%d/gi%d/access %d\n", g.minor, gi, nvmlstate.GIAccessMinor(g.minor, gi))
			for ci := range nvmlstate.MaxCIID + 1 {
				fmt.Fprintf(&minors, "gpu%d/gi%d/ci%d/access %d\n", g.minor, gi, ci, nvmlstate.CIAccessMinor(g.minor, gi, ci))
			}
		}
	}
	mkdir(t, filepath.Dir(MIGMinorsPath(root)))
	writeFile(t, MIGMinorsPath(root), minors.String())
	mkdir(t, filepath.Join(root, "dev/nvidia-caps"))
	f := &fakeMIG{root: root, gpus: gpus}
	f.Interface = &mock.Interface{
		InitFunc:                       func() nvml.Return { f.mu.Lock(); defer f.mu.Unlock(); f.inits++; return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { f.mu.Lock(); defer f.mu.Unlock(); f.shutdowns++; return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "570.172.08", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(gpus) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return f.device(gpus[i]), nvml.SUCCESS
		},
		DeviceGetHandleByUUIDFunc: func(uuid string) (nvml.Device, nvml.Return) {
			for _, g := range gpus {
				if g.uuid == uuid {
					return f.device(g), nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
	}
	return f
}

func fakeMIGH100(minor int, busID string, migMode int) *fakeMIGGPU {
	return &fakeMIGGPU{mockGPU: h100(minor, busID), migMode: migMode}
}

func (f *fakeMIG) profile(g *fakeMIGGPU, id int) (gpu.GIProfile, bool) {
	i := slices.IndexFunc(g.table.GIProfiles, func(p gpu.GIProfile) bool { return p.ID == id })
	if i < 0 {
		return gpu.GIProfile{}, false
	}
	return g.table.GIProfiles[i], true
}

func profileInfo(p gpu.GIProfile) nvml.GpuInstanceProfileInfo {
	return nvml.GpuInstanceProfileInfo{
		Id: uint32(p.ID), SliceCount: uint32(p.Slices), InstanceCount: uint32(p.Instances),
		MultiprocessorCount: uint32(p.SMs), CopyEngineCount: uint32(p.CopyEngines), DecoderCount: uint32(p.Decoders),
		EncoderCount: uint32(p.Encoders), JpegCount: uint32(p.JPEGs), OfaCount: uint32(p.OFAs), MemorySizeMB: p.MemoryMB,
	}
}

func (f *fakeMIG) capNode(minor int) string {
	return filepath.Join(f.root, "dev/nvidia-caps", fmt.Sprintf("nvidia-cap%d", minor))
}

// createGI creates a GI as NVML would (used by tests to set up foreign or
// orphaned instances too).
func (f *fakeMIG) createGI(g *fakeMIGGPU, profileID, start int) (*fakeGI, nvml.Return) {
	p, ok := f.profile(g, profileID)
	if !ok || !slices.Contains(p.Starts, start) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	for _, gi := range g.gis {
		if start < gi.start+gi.size && gi.start < start+p.MemorySlices {
			return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
		}
	}
	id, ok := gpu.GIID(start, p.MemorySlices)
	if !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	gi := &fakeGI{id: id, profileID: profileID, start: start, size: p.MemorySlices, slices: p.Slices, cis: map[int]string{}}
	g.gis[id] = gi
	f.giCreates++
	_ = os.WriteFile(f.capNode(nvmlstate.GIAccessMinor(g.minor, id)), nil, 0o644)
	return gi, nvml.SUCCESS
}

func (f *fakeMIG) createCI(g *fakeMIGGPU, gi *fakeGI) (int, nvml.Return) {
	if len(gi.cis) > 0 {
		return 0, nvml.ERROR_INSUFFICIENT_RESOURCES // the one full-GI CI exists
	}
	gi.cis[0] = gpu.DeriveMIGUUID(g.uuid, gi.id, 0)
	f.ciCreates++
	_ = os.WriteFile(f.capNode(nvmlstate.CIAccessMinor(g.minor, gi.id, 0)), nil, 0o644)
	return 0, nvml.SUCCESS
}

// instances lists the GPU's GIs by id.
func (g *fakeMIGGPU) instances() []*fakeGI {
	var out []*fakeGI
	for _, id := range mapsKeys(g.gis) {
		out = append(out, g.gis[id])
	}
	return out
}

func mapsKeys[V any](m map[int]V) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (f *fakeMIG) device(g *fakeMIGGPU) *mock.Device {
	d := g.mockGPU.device()
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return g.migMode, g.migMode, nvml.SUCCESS }
	d.GetGpuInstanceProfileInfoFunc = func(idx int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
		for _, p := range g.table.GIProfiles {
			if p.Index == idx {
				return profileInfo(p), nvml.SUCCESS
			}
		}
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetGpuInstancePossiblePlacementsFunc = func(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
		p, ok := f.profile(g, int(info.Id))
		if !ok {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		var out []nvml.GpuInstancePlacement
		for _, s := range p.Starts {
			out = append(out, nvml.GpuInstancePlacement{Start: uint32(s), Size: uint32(p.MemorySlices)})
		}
		return out, nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, gi := range g.instances() {
			for _, ci := range mapsKeys(gi.cis) {
				if n == i {
					return f.migDevice(gi, ci), nvml.SUCCESS
				}
				n++
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	d.GetGpuInstanceByIdFunc = func(id int) (nvml.GpuInstance, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		gi, ok := g.gis[id]
		if !ok {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return f.gpuInstance(g, gi), nvml.SUCCESS
	}
	d.GetGpuInstancesFunc = func(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstance, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []nvml.GpuInstance
		for _, gi := range g.instances() {
			if gi.profileID == int(info.Id) {
				out = append(out, f.gpuInstance(g, gi))
			}
		}
		return out, nvml.SUCCESS
	}
	d.CreateGpuInstanceWithPlacementFunc = func(info *nvml.GpuInstanceProfileInfo, pl *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		p, ok := f.profile(g, int(info.Id))
		if !ok || int(pl.Size) != p.MemorySlices {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		gi, ret := f.createGI(g, int(info.Id), int(pl.Start))
		if ret != nvml.SUCCESS {
			return nil, ret
		}
		return f.gpuInstance(g, gi), nvml.SUCCESS
	}
	return d
}

func (f *fakeMIG) migDevice(gi *fakeGI, ci int) *mock.Device {
	uuid := gi.cis[ci]
	return &mock.Device{
		GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi.id, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
		IsMigDeviceHandleFunc:    func() (bool, nvml.Return) { return true, nvml.SUCCESS },
		GetMinorNumberFunc:       func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		GetMigDeviceHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) {
			return nil, nvml.ERROR_NOT_SUPPORTED
		},
	}
}

// ciSlices are the compute slices of NVML_COMPUTE_INSTANCE_PROFILE_* 0..4.
var ciSlices = []int{1, 2, 3, 4, 7}

func (f *fakeMIG) gpuInstance(g *fakeMIGGPU, gi *fakeGI) *mock.GpuInstance {
	alive := func() bool { return g.gis[gi.id] == gi }
	var m *mock.GpuInstance
	m = &mock.GpuInstance{
		GetInfoFunc: func() (nvml.GpuInstanceInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !alive() {
				return nvml.GpuInstanceInfo{}, nvml.ERROR_NOT_FOUND
			}
			return nvml.GpuInstanceInfo{Id: uint32(gi.id), ProfileId: uint32(gi.profileID),
				Placement: nvml.GpuInstancePlacement{Start: uint32(gi.start), Size: uint32(gi.size)}}, nvml.SUCCESS
		},
		GetComputeInstanceProfileInfoFunc: func(idx, eng int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
			if idx >= len(ciSlices) || eng != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || ciSlices[idx] > gi.slices {
				return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.ComputeInstanceProfileInfo{Id: uint32(idx), SliceCount: uint32(ciSlices[idx]), InstanceCount: 1}, nvml.SUCCESS
		},
		CreateComputeInstanceFunc: func(info *nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !alive() {
				return nil, nvml.ERROR_NOT_FOUND
			}
			if int(info.SliceCount) != gi.slices {
				return nil, nvml.ERROR_INVALID_ARGUMENT // the fake only knows the full-GI CI
			}
			ci, ret := f.createCI(g, gi)
			if ret != nvml.SUCCESS {
				return nil, ret
			}
			return f.computeInstance(g, gi, ci), nvml.SUCCESS
		},
		GetComputeInstanceByIdFunc: func(id int) (nvml.ComputeInstance, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := gi.cis[id]; !ok || !alive() {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return f.computeInstance(g, gi, id), nvml.SUCCESS
		},
		GetComputeInstancesFunc: func(info *nvml.ComputeInstanceProfileInfo) ([]nvml.ComputeInstance, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []nvml.ComputeInstance
			if int(info.SliceCount) == gi.slices {
				for _, id := range mapsKeys(gi.cis) {
					out = append(out, f.computeInstance(g, gi, id))
				}
			}
			return out, nvml.SUCCESS
		},
		DestroyFunc: func() nvml.Return {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !alive() {
				return nvml.ERROR_NOT_FOUND
			}
			if len(gi.cis) > 0 {
				return nvml.ERROR_IN_USE
			}
			delete(g.gis, gi.id)
			f.giDestroys++
			_ = os.Remove(f.capNode(nvmlstate.GIAccessMinor(g.minor, gi.id)))
			return nvml.SUCCESS
		},
	}
	return m
}

func (f *fakeMIG) computeInstance(g *fakeMIGGPU, gi *fakeGI, id int) *mock.ComputeInstance {
	return &mock.ComputeInstance{
		GetInfoFunc: func() (nvml.ComputeInstanceInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := gi.cis[id]; !ok {
				return nvml.ComputeInstanceInfo{}, nvml.ERROR_NOT_FOUND
			}
			return nvml.ComputeInstanceInfo{Device: f.migDevice(gi, id), Id: uint32(id),
				Placement: nvml.ComputeInstancePlacement{Start: 0, Size: uint32(gi.slices)}}, nvml.SUCCESS
		},
		DestroyFunc: func() nvml.Return {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := gi.cis[id]; !ok || g.gis[gi.id] != gi {
				return nvml.ERROR_NOT_FOUND
			}
			delete(gi.cis, id)
			f.ciDestroy++
			_ = os.Remove(f.capNode(nvmlstate.CIAccessMinor(g.minor, gi.id, id)))
			return nvml.SUCCESS
		},
	}
}
