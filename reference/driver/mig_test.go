package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// migEnv is a plugin environment over a fake NVML with GPU 0 in MIG mode
// and GPU 1 without MIG.
type migEnv struct {
	*pluginEnv
	nvml *fakeMIG
}

func newMIGEnv(t *testing.T) *migEnv {
	t.Helper()
	env := newPluginEnv(t)
	fake := newFakeMIG(t, env.root.dir, fakeMIGH100(0, "00000000:1B:00.0", nvml.DEVICE_MIG_ENABLE), fakeMIGH100(1, "00000000:43:00.0", nvml.DEVICE_MIG_DISABLE))
	env.mig = &migOps{lib: fake, minorsPath: MIGMinorsPath(env.root.dir)}
	e := &migEnv{pluginEnv: env, nvml: fake}
	e.discover(t)
	return e
}

// discover runs discovery again, as a driver start does.
func (e *migEnv) discover(t *testing.T) {
	t.Helper()
	inv, err := (&NVMLDiscoverer{NVML: e.nvml, SysfsRoot: t.TempDir(), MIGMinorsPath: MIGMinorsPath(e.root.dir), fabricOf: noFabric}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.inventory = inv
}

func (e *migEnv) gis(t *testing.T) []string {
	t.Helper()
	e.nvml.mu.Lock()
	defer e.nvml.mu.Unlock()
	var out []string
	for _, g := range e.nvml.gpus {
		for _, gi := range g.instances() {
			out = append(out, fmt.Sprintf("gpu%d/gi%d profile %d at %d:%d cis %d", g.minor, gi.id, gi.profileID, gi.start, gi.size, len(gi.cis)))
		}
	}
	return out
}

func TestDiscoverMIG(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	g0, g1 := env.inventory.GPUs[0], env.inventory.GPUs[1]
	if g1.MIG != nil {
		t.Errorf("GPU 1 has MIG disabled but got MIG info %+v", g1.MIG)
	}
	if g0.MIG == nil {
		t.Fatal("GPU 0 has MIG enabled but no MIG info")
	}
	var names []string
	for _, p := range g0.MIG.Profiles {
		names = append(names, fmt.Sprintf("%s id=%d index=%d placements=%d", p.Name, p.Info.Id, p.Index, len(p.Placements)))
	}
	want := []string{
		"1g.10gb id=19 index=0 placements=7", "2g.20gb id=14 index=1 placements=3", "3g.40gb id=9 index=2 placements=2",
		"4g.40gb id=5 index=3 placements=1", "7g.80gb id=0 index=4 placements=1", "1g.10gb+me id=20 index=7 placements=7",
		"1g.20gb id=15 index=9 placements=4",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("profiles (-want +got):\n%s", diff)
	}
	if len(g0.MIG.Instances) != 0 {
		t.Errorf("instances %+v, want none", g0.MIG.Instances)
	}

	// A MIG device made by someone else shows up as an instance.
	env.nvml.mu.Lock()
	gi, ret := env.nvml.createGI(env.nvml.gpus[0], 9, 4)
	if ret == nvml.SUCCESS {
		_, ret = env.nvml.createCI(env.nvml.gpus[0], gi)
	}
	env.nvml.mu.Unlock()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	env.discover(t)
	wantInst := []MIGInstance{{GI: 1, CI: 0, ProfileID: 9, Start: 4, Size: 4, Name: "3g.40gb",
		UUID: gpu.DeriveMIGUUID(g0.UUID, 1, 0), MemoryBytes: 40448 << 20,
		GICapMinor: nvmlstate.GIAccessMinor(0, 1), CICapMinor: nvmlstate.CIAccessMinor(0, 1, 0)}}
	if diff := cmp.Diff(wantInst, env.inventory.GPUs[0].MIG.Instances); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
}

func TestMIGProfileName(t *testing.T) {
	t.Parallel()
	const h100, a100 = 85520809984, 42949672960
	for _, tc := range []struct {
		index  int
		slices uint32
		mb     uint64
		total  uint64
		want   string
	}{
		{nvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 9984, h100, "1g.10gb"},
		{nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 9984, h100, "1g.10gb+me"},
		{nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 20096, h100, "1g.20gb"},
		{nvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, 81152, h100, "7g.80gb"},
		{nvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 4864, a100, "1g.5gb"},
		{nvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 19968, a100, "3g.20gb"},
		{nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 1, 4864, a100, "1g.5gb-me"},
		{nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX, 2, 9856, a100, "2g.10gb+gfx"},
	} {
		got := MIGProfileName(tc.index, nvml.GpuInstanceProfileInfo{SliceCount: tc.slices, MemorySizeMB: tc.mb}, tc.total)
		if got != tc.want {
			t.Errorf("profile index %d, %d MiB of %d bytes: got %q, want %q", tc.index, tc.mb, tc.total, got, tc.want)
		}
	}
}

func readSpec(t *testing.T, path string) cdispec.Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPrepareDynamicMIG(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	p := env.plugin(t)
	claim := harnesstest.AllocatedClaim("mig", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0-mig-1g10gb-3"))

	for attempt := range 2 {
		res := harnesstest.Prepare(t, p, claim)[claim.UID]
		if res.Err != nil {
			t.Fatalf("prepare %d: %v", attempt, res.Err)
		}
	}
	if env.nvml.giCreates != 1 || env.nvml.ciCreates != 1 {
		t.Errorf("prepare twice created %d GIs and %d CIs, want 1 and 1", env.nvml.giCreates, env.nvml.ciCreates)
	}
	// 1g at start 3 is GI 14 (eighths 7..14: starts 4..7, then 0..3).
	if diff := cmp.Diff([]string{"gpu0/gi14 profile 19 at 3:1 cis 1"}, env.gis(t)); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	uuid := gpu.DeriveMIGUUID(env.inventory.GPUs[0].UUID, 14, 0)
	spec := readSpec(t, env.specPath(uidA))
	want := cdispec.ContainerEdits{
		Env: []string{"DRAKIT_DEVICE_GPU_0_MIG_1G10GB_3=" + uuid},
		DeviceNodes: []*cdispec.DeviceNode{
			{Path: "/dev/nvidia0", HostPath: env.root.dir + "/dev/nvidia0"},
			{Path: fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", nvmlstate.GIAccessMinor(0, 14)), HostPath: fmt.Sprintf("%s/dev/nvidia-caps/nvidia-cap%d", env.root.dir, nvmlstate.GIAccessMinor(0, 14))},
			{Path: fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", nvmlstate.CIAccessMinor(0, 14, 0)), HostPath: fmt.Sprintf("%s/dev/nvidia-caps/nvidia-cap%d", env.root.dir, nvmlstate.CIAccessMinor(0, 14, 0))},
		},
	}
	if len(spec.Devices) != 1 {
		t.Fatalf("spec has %d devices, want 1", len(spec.Devices))
	}
	if diff := cmp.Diff(want, spec.Devices[0].ContainerEdits); diff != "" {
		t.Errorf("MIG device edits (-want +got):\n%s", diff)
	}
	for _, n := range want.DeviceNodes[1:] {
		if _, err := os.Stat(n.HostPath); err != nil {
			t.Errorf("capability node: %v", err)
		}
	}

	for attempt := range 2 {
		if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
			t.Fatalf("unprepare %d: %v", attempt, err)
		}
	}
	if got := env.gis(t); len(got) != 0 {
		t.Errorf("instances left after unprepare: %v", got)
	}
	if _, err := os.Stat(env.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec left after unprepare (stat: %v)", err)
	}
	if len(p.Prepared()) != 0 {
		t.Errorf("checkpoint still lists %v", p.Prepared())
	}
}

func TestPrepareMIGRestart(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	p := env.plugin(t)
	claim := harnesstest.AllocatedClaim("mig", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0-mig-3g40gb-0"))
	if res := harnesstest.Prepare(t, p, claim)[claim.UID]; res.Err != nil {
		t.Fatal(res.Err)
	}
	// Restart: discovery now sees the driver's own instance; the GPU must
	// stay dynamic and the prepared claim must be answered from the
	// checkpoint.
	env.discover(t)
	p = env.plugin(t)
	if _, ok := p.hw.devices["gpu-0-mig-3g40gb-0"]; !ok {
		t.Errorf("after a restart the partition device is no longer published; devices: %v", slices.Sorted(mapKeys(p.hw.devices)))
	}
	if res := harnesstest.Prepare(t, p, claim)[claim.UID]; res.Err != nil {
		t.Fatalf("prepare after restart: %v", res.Err)
	}
	if env.nvml.giCreates != 1 {
		t.Errorf("%d GIs created, want 1", env.nvml.giCreates)
	}
	if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatal(err)
	}
	if got := env.gis(t); len(got) != 0 {
		t.Errorf("instances left after unprepare: %v", got)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestMIGOrphanCleanupOnStart(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	g := env.nvml.gpus[0]
	// A prepare crashed after creating GI and CI but before recording
	// their ids; a second one crashed after recording the GI only.
	env.nvml.mu.Lock()
	gi1, _ := env.nvml.createGI(g, 19, 0)
	env.nvml.createCI(g, gi1)
	gi2, _ := env.nvml.createGI(g, 14, 4)
	env.nvml.createCI(g, gi2)
	env.nvml.mu.Unlock()
	rec := func(profileIndex, profileID, start, size, slices int, gi *int) *migRecord {
		return &migRecord{ParentUUID: g.uuid, ParentMinor: 0, ProfileIndex: profileIndex, ProfileID: profileID, Start: start, Size: size, Slices: slices, GI: gi}
	}
	saveCheckpoint(t, env.pluginDir, map[string]preparedClaim{
		uidA: {Namespace: "test", Name: "a", Incomplete: true, Devices: []preparedDevice{recorded("gpu", "gpu-0-mig-1g10gb-0", rec(0, 19, 0, 1, 1, nil))}},
		uidB: {Namespace: "test", Name: "b", Incomplete: true, Devices: []preparedDevice{recorded("gpu", "gpu-0-mig-2g20gb-4", rec(1, 14, 4, 2, 2, ptr.To(gi2.id)))}},
	})
	env.discover(t)
	p := env.plugin(t)
	if got := env.gis(t); len(got) != 0 {
		t.Errorf("orphans left after start: %v", got)
	}
	if len(p.Prepared()) != 0 {
		t.Errorf("checkpoint still lists %v", p.Prepared())
	}
	if _, ok := p.hw.devices["gpu-0-mig-1g10gb-0"]; !ok {
		t.Error("the GPU whose orphans were destroyed is no longer published in dynamic mode")
	}
}

func TestMIGForeignInstancesMakeGPUStatic(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	g := env.nvml.gpus[0]
	env.nvml.mu.Lock()
	gi, _ := env.nvml.createGI(g, 9, 0)
	env.nvml.createCI(g, gi)
	env.nvml.mu.Unlock()
	env.discover(t)
	p := env.plugin(t)
	if got := env.gis(t); len(got) != 1 {
		t.Fatalf("the foreign instance was touched: %v", got)
	}
	names := slices.Sorted(mapKeys(p.hw.devices))
	if diff := cmp.Diff([]string{"gpu-0-mig-gi2-ci0", "gpu-1"}, names); diff != "" {
		t.Fatalf("devices (-want +got):\n%s", diff)
	}
	for _, s := range p.Resources().Pools[testNode].Slices {
		if len(s.SharedCounters) > 0 {
			t.Errorf("a static MIG GPU got counter sets %v", s.SharedCounters)
		}
	}
	claim := harnesstest.AllocatedClaim("static", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0-mig-gi2-ci0"))
	if r := harnesstest.Prepare(t, p, claim)[claim.UID]; r.Err != nil {
		t.Fatal(r.Err)
	}
	spec := readSpec(t, env.specPath(uidA))
	uuid := gpu.DeriveMIGUUID(g.uuid, 2, 0)
	if got := spec.Devices[0].ContainerEdits.Env; !slices.Equal(got, []string{"DRAKIT_DEVICE_GPU_0_MIG_GI2_CI0=" + uuid}) {
		t.Errorf("env %v", got)
	}
	var paths []string
	for _, n := range spec.Devices[0].ContainerEdits.DeviceNodes {
		paths = append(paths, n.Path)
	}
	wantPaths := []string{"/dev/nvidia0", fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", nvmlstate.GIAccessMinor(0, 2)), fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", nvmlstate.CIAccessMinor(0, 2, 0))}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("device nodes (-want +got):\n%s", diff)
	}
	if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatal(err)
	}
	if got := env.gis(t); len(got) != 1 {
		t.Errorf("unprepare of a static MIG device changed the instances: %v", got)
	}
}

func TestPrepareMIGInsufficientResources(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	p := env.plugin(t)
	// Someone else takes memory slices 0..3 after the driver started.
	env.nvml.mu.Lock()
	_, ret := env.nvml.createGI(env.nvml.gpus[0], 9, 0)
	env.nvml.mu.Unlock()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	ok := harnesstest.AllocatedClaim("ok", uidB, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0-mig-1g10gb-5"))
	bad := harnesstest.AllocatedClaim("bad", uidA,
		harnesstest.AllocResult(testDriver, testNode, "a", "gpu-0-mig-1g10gb-4"),
		harnesstest.AllocResult(testDriver, testNode, "b", "gpu-0-mig-1g10gb-2"))
	res := harnesstest.Prepare(t, p, bad, ok)
	if !errors.Is(res[bad.UID].Err, ErrMIGPlacementBusy) {
		t.Errorf("prepare of an overlapping placement: %v, want ErrMIGPlacementBusy", res[bad.UID].Err)
	}
	if res[ok.UID].Err != nil {
		t.Errorf("the other claim failed too: %v", res[ok.UID].Err)
	}
	// The first device of the failed claim was rolled back.
	if diff := cmp.Diff([]string{"gpu0/gi2 profile 9 at 0:4 cis 0", "gpu0/gi8 profile 19 at 5:1 cis 1"}, env.gis(t)); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	if _, ok := p.Prepared()[uidA]; ok {
		t.Error("the failed claim is checkpointed")
	}
	if _, err := os.Stat(env.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed claim has a spec (stat: %v)", err)
	}
}

func TestPrepareMIGAdminAccessRejected(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	p := env.plugin(t)
	r := harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0-mig-1g10gb-0")
	r.AdminAccess = ptr.To(true)
	claim := harnesstest.AllocatedClaim("admin", uidA, r)
	if err := harnesstest.Prepare(t, p, claim)[claim.UID].Err; err == nil || !strings.Contains(err.Error(), "admin access") {
		t.Errorf("prepare with admin access on a partition: %v", err)
	}
	if got := env.gis(t); len(got) != 0 {
		t.Errorf("instances created: %v", got)
	}
}
