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
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
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
	inv, err := (&NVMLDiscoverer{NVML: e.nvml, SysfsRoot: t.TempDir(), MIGMinorsPath: MIGMinorsPath(e.root.dir)}).Discover(t.Context())
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
		UUID: profile.DeriveMIGUUID(g0.UUID, 1, 0), MemoryBytes: 40448 << 20,
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

// poolSlices splits the pool's slices into device and counter slices.
func poolSlices(t *testing.T, inv *Inventory, opts publishOptions) (devs []resourceapi.Device, devSlices, counterSlices int, sets []resourceapi.CounterSet) {
	t.Helper()
	res, err := buildResources(testNode, inv, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Pools[testNode].Slices {
		if len(s.Devices) > 0 && len(s.SharedCounters) > 0 {
			t.Fatalf("a slice sets both devices and sharedCounters")
		}
		if len(s.SharedCounters) > 0 {
			counterSlices++
			if len(s.SharedCounters) > maxCounterSetsPerSlice {
				t.Errorf("slice has %d counter sets", len(s.SharedCounters))
			}
			sets = append(sets, s.SharedCounters...)
			continue
		}
		devSlices++
		consuming := slices.ContainsFunc(s.Devices, func(d resourceapi.Device) bool { return len(d.ConsumesCounters) > 0 })
		if consuming && len(s.Devices) > maxConsumingDevicesPerSlice || len(s.Devices) > maxDevicesPerSlice {
			t.Errorf("slice has %d devices (consuming counters: %v)", len(s.Devices), consuming)
		}
		if (s.PartitionTypeAttribute != nil) != (opts.PartitionAlpha && consuming) {
			t.Errorf("partitionTypeAttribute %v with alpha %v, consuming %v", s.PartitionTypeAttribute, opts.PartitionAlpha, consuming)
		}
		devs = append(devs, s.Devices...)
	}
	return devs, devSlices, counterSlices, sets
}

func TestBuildResourcesMIG(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	devs, devSlices, counterSlices, sets := poolSlices(t, env.inventory, publishOptions{DriverName: testDriver})
	if devSlices != 1 || counterSlices != 1 {
		t.Errorf("%d device slices and %d counter slices, want 1 and 1", devSlices, counterSlices)
	}
	byName := map[string]resourceapi.Device{}
	var names []string
	for _, d := range devs {
		byName[d.Name] = d
		names = append(names, d.Name)
	}
	// Full GPU, 7+3+2+1+1+7+4 placements, then the GPU without MIG.
	want := []string{"gpu-0"}
	for _, p := range []struct {
		label  string
		starts []int
	}{{"1g10gb", []int{0, 1, 2, 3, 4, 5, 6}}, {"2g20gb", []int{0, 2, 4}}, {"3g40gb", []int{0, 4}}, {"4g40gb", []int{0}},
		{"7g80gb", []int{0}}, {"1g10gb-me", []int{0, 1, 2, 3, 4, 5, 6}}, {"1g20gb", []int{0, 2, 4, 6}}} {
		for _, s := range p.starts {
			want = append(want, fmt.Sprintf("gpu-0-mig-%s-%d", p.label, s))
		}
	}
	want = append(want, "gpu-1")
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("device names (-want +got):\n%s", diff)
	}

	qty := func(s string) resourceapi.Counter { return resourceapi.Counter{Value: resource.MustParse(s)} }
	wantSet := map[string]resourceapi.Counter{
		"multiprocessors": qty("132"), "copy-engines": qty("8"), "decoders": qty("7"), "jpeg-engines": qty("7"),
		"ofa-engines": qty("1"), "memory": qty("81152Mi"),
	}
	for i := range 8 {
		wantSet[fmt.Sprintf("memory-slice-%d", i)] = qty("1")
	}
	quantityEqual := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff([]resourceapi.CounterSet{{Name: "gpu-0-counter-set", Counters: wantSet}}, sets, quantityEqual); diff != "" {
		t.Errorf("counter sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: wantSet}}, byName["gpu-0"].ConsumesCounters, quantityEqual); diff != "" {
		t.Errorf("full GPU consumption (-want +got):\n%s", diff)
	}
	wantPart := map[string]resourceapi.Counter{
		"multiprocessors": qty("60"), "copy-engines": qty("3"), "decoders": qty("3"), "jpeg-engines": qty("3"), "memory": qty("40448Mi"),
		"memory-slice-4": qty("1"), "memory-slice-5": qty("1"), "memory-slice-6": qty("1"), "memory-slice-7": qty("1"),
	}
	part := byName["gpu-0-mig-3g40gb-4"]
	if diff := cmp.Diff([]resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counter-set", Counters: wantPart}}, part.ConsumesCounters, quantityEqual); diff != "" {
		t.Errorf("3g.40gb at 4 consumption (-want +got):\n%s", diff)
	}
	g0 := env.inventory.GPUs[0]
	for attr, want := range map[resourceapi.QualifiedName]string{
		"type": "mig", "profile": "3g.40gb", "parentUUID": g0.UUID, "productName": g0.ProductName,
	} {
		if got := part.Attributes[attr].StringValue; got == nil || *got != want {
			t.Errorf("3g.40gb attribute %s = %v, want %q", attr, got, want)
		}
	}
	for attr, want := range map[resourceapi.QualifiedName]int64{"parentMinor": 0, "placementStart": 4, "placementSize": 4, "profileID": 9} {
		if got := part.Attributes[attr].IntValue; got == nil || *got != want {
			t.Errorf("3g.40gb attribute %s = %v, want %d", attr, got, want)
		}
	}
	if got, want := part.Capacity["memory"].Value, resource.MustParse("40448Mi"); got.Cmp(want) != 0 {
		t.Errorf("3g.40gb memory %s, want %s", got.String(), want.String())
	}
	if got := byName["gpu-1"]; len(got.ConsumesCounters) != 0 || *got.Attributes["type"].StringValue != "gpu" || got.Attributes["profile"].StringValue != nil {
		t.Errorf("GPU without MIG published as %+v, want a plain full GPU", got)
	}
	for _, d := range devs {
		for _, c := range d.ConsumesCounters {
			if len(c.CompatibilityGroups) != 0 {
				t.Errorf("device %s has compatibility groups with the alpha fields off", d.Name)
			}
		}
	}

	// Alpha fields on: partition type attribute and compatibility groups.
	devs, _, _, _ = poolSlices(t, env.inventory, publishOptions{DriverName: testDriver, PartitionAlpha: true})
	for _, d := range devs {
		if len(d.ConsumesCounters) == 0 {
			continue
		}
		want := []string{"mig"}
		if d.Name == "gpu-0" {
			want = []string{"full-gpu"}
		}
		if !slices.Equal(d.ConsumesCounters[0].CompatibilityGroups, want) {
			t.Errorf("device %s compatibility groups %v, want %v", d.Name, d.ConsumesCounters[0].CompatibilityGroups, want)
		}
		if d.Attributes["profile"].StringValue == nil {
			t.Errorf("device %s consumes counters but has no string profile attribute", d.Name)
		}
	}
}

// TestMIGCountersAdmitEveryLayout checks that the counters never reject a
// layout NVML accepts: every set of non-overlapping placements (at most 7
// MIG devices, at most one +me) fits the counter set, and every placement
// overlapping a chosen one is blocked by a memory slice counter.
func TestMIGCountersAdmitEveryLayout(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	devs, _, _, sets := poolSlices(t, env.inventory, publishOptions{DriverName: testDriver})
	total := sets[0].Counters
	var parts []resourceapi.Device
	for _, d := range devs {
		if d.Attributes["type"].StringValue != nil && *d.Attributes["type"].StringValue == "mig" {
			parts = append(parts, d)
		}
	}
	layouts := 0
	var walk func(from int, used map[string]resource.Quantity, n, me int)
	walk = func(from int, used map[string]resource.Quantity, n, me int) {
		layouts++
		for name, q := range used {
			if limit := total[name].Value; q.Cmp(limit) > 0 {
				t.Fatalf("a layout of %d devices uses %s of %s, the set has %s", n, &q, name, &limit)
			}
		}
		if n == 7 {
			return
		}
		for i := from; i < len(parts); i++ {
			c := parts[i].ConsumesCounters[0].Counters
			isME := strings.HasSuffix(*parts[i].Attributes["profile"].StringValue, "+me")
			overlap := false
			for name := range c {
				if q, ok := used[name]; ok && strings.HasPrefix(name, "memory-slice-") && q.Sign() > 0 {
					overlap = true
				}
			}
			if overlap || (isME && me > 0) {
				continue
			}
			next := map[string]resource.Quantity{}
			for k, v := range used {
				next[k] = v.DeepCopy()
			}
			for name, q := range c {
				v := next[name]
				v.Add(q.Value)
				next[name] = v
			}
			walk(i+1, next, n+1, me+map[bool]int{true: 1}[isME])
		}
	}
	walk(0, map[string]resource.Quantity{}, 0, 0)
	if layouts < 100 {
		t.Errorf("only %d layouts checked", layouts)
	}
}

func TestBuildResourcesMIGSlicesLimits(t *testing.T) {
	t.Parallel()
	env := newMIGEnv(t)
	// 20 copies of the MIG GPU: 20 counter sets (3 slices of at most 8),
	// 20·26 consuming devices in slices of at most 64.
	inv := *env.inventory
	inv.GPUs = nil
	for i := range 20 {
		g := env.inventory.GPUs[0]
		g.Minor, g.Index = i, i
		inv.GPUs = append(inv.GPUs, g)
	}
	devs, devSlices, counterSlices, sets := poolSlices(t, &inv, publishOptions{DriverName: testDriver})
	if len(devs) != 20*26 || len(sets) != 20 || counterSlices != 3 || devSlices != (20*26+63)/64 {
		t.Errorf("%d devices in %d slices, %d counter sets in %d slices; want %d in %d, 20 in 3",
			len(devs), devSlices, len(sets), counterSlices, 20*26, (20*26+63)/64)
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
	uuid := profile.DeriveMIGUUID(env.inventory.GPUs[0].UUID, 14, 0)
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
	uuid := profile.DeriveMIGUUID(g.uuid, 2, 0)
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
