package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// emulatedMIG is a rendered mixed-mig root with the driver's discovery and
// MIG manager on the real NVML shim.
type emulatedMIG struct {
	root      string
	lib       nvml.Interface
	cdiDir    string
	pluginDir string
	libPath   string
	fatal     *harnesstest.FatalRecorder
}

func newEmulatedMIG(t *testing.T) *emulatedMIG {
	t.Helper()
	root := renderProfile(t, builtinProfile(t, "mixed-mig"))
	t.Setenv(nvmltest.RootEnv, root)
	disc, libPath, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	return &emulatedMIG{root: root, lib: disc.NVML, cdiDir: filepath.Join(t.TempDir(), "cdi"), pluginDir: t.TempDir(), libPath: libPath, fatal: &harnesstest.FatalRecorder{}}
}

// start starts a new plugin instance over the environment's checkpoint,
// discovering the GPUs through the shim, as a driver (re)start does.
func (e *emulatedMIG) start(t *testing.T) testPlugin {
	t.Helper()
	disc := &NVMLDiscoverer{NVML: e.lib, SysfsRoot: filepath.Join(e.root, "sys"), MIGMinorsPath: MIGMinorsPath(e.root)}
	p, err := startPlugin(t, disc, e.root, e.libPath, e.cdiDir, e.pluginDir, &migOps{lib: e.lib, minorsPath: MIGMinorsPath(e.root)}, e.fatal)
	if err != nil {
		t.Fatalf("start plugin: %v", err)
	}
	return p
}

// state parses the shim's state file: what the emulated kernel driver holds.
func (e *emulatedMIG) state(t *testing.T) *nvmlstate.State {
	t.Helper()
	return readState(t, e.root)
}

// instances lists the GPU's GIs and CIs in the state file.
func (e *emulatedMIG) instances(t *testing.T, gpu int) (gis []nvmlstate.GPUInstance, cis []nvmlstate.ComputeInstance) {
	t.Helper()
	s := e.state(t)
	for _, gi := range s.GPUInstances {
		if gi.GPU == gpu {
			gis = append(gis, gi)
		}
	}
	for _, ci := range s.ComputeInstances {
		if ci.GPU == gpu {
			cis = append(cis, ci)
		}
	}
	return gis, cis
}

func (e *emulatedMIG) capNode(minor int) string {
	return filepath.Join(e.root, "dev/nvidia-caps", fmt.Sprintf("nvidia-cap%d", minor))
}

func (e *emulatedMIG) specPath(uid string) string {
	return filepath.Join(e.cdiDir, "k8s.gpu.drakit.dev-claim_"+uid+".json")
}

// migUUIDs enumerates the GPU's MIG devices through go-nvml over the shim,
// as a process in the container would.
func (e *emulatedMIG) migUUIDs(t *testing.T, parentUUID string) []string {
	t.Helper()
	if ret := e.lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("init NVML: %v", ret)
	}
	defer e.lib.Shutdown()
	dev, ret := e.lib.DeviceGetHandleByUUID(parentUUID)
	if ret != nvml.SUCCESS {
		t.Fatalf("get GPU %s: %v", parentUUID, ret)
	}
	n, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		t.Fatalf("max MIG device count: %v", ret)
	}
	var out []string
	for i := range n {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != nvml.SUCCESS {
			t.Fatalf("MIG device %d: %v", i, ret)
		}
		uuid, ret := mig.GetUUID()
		if ret != nvml.SUCCESS {
			t.Fatalf("UUID of MIG device %d: %v", i, ret)
		}
		out = append(out, uuid)
	}
	return out
}

// TestPrepareEmulatedDynamicMIG runs the dynamic MIG lifecycle of the driver
// against the real NVML shim over a rendered mixed-mig root (not parallel:
// the shim's root comes from the environment): prepare creates the GI at the
// allocated placement and a CI, the CDI spec injects exactly the nodes the
// emulator created, an overlapping claim fails with INSUFFICIENT_RESOURCES,
// and unprepare after a restart destroys everything again.
func TestPrepareEmulatedDynamicMIG(t *testing.T) {
	e := newEmulatedMIG(t)
	p := e.start(t)
	const partition, full = "gpu-2-mig-1g10gb-0", "gpu-2-mig-7g80gb-0"
	for _, name := range []string{partition, full} {
		if d, ok := p.hw.devices[name]; !ok || d.Kind != kindMIGPartition {
			t.Fatalf("device %s is not published as a partition; devices: %v", name, slices.Sorted(mapKeys(p.hw.devices)))
		}
	}
	parent := p.hw.devices[partition].GPU
	before := e.state(t)
	if gis, cis := e.instances(t, parent.Minor); len(gis)+len(cis) != 0 {
		t.Fatalf("GPU %d has instances before the test: %v %v", parent.Minor, gis, cis)
	}

	claim := harnesstest.AllocatedClaim("mig", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", partition))
	for attempt := range 2 {
		if res := harnesstest.Prepare(t, p, claim)[claim.UID]; res.Err != nil {
			t.Fatalf("prepare %d: %v", attempt, res.Err)
		}
	}
	gis, cis := e.instances(t, parent.Minor)
	if len(gis) != 1 || len(cis) != 1 {
		t.Fatalf("after preparing twice GPU %d has GIs %+v and CIs %+v, want one of each", parent.Minor, gis, cis)
	}
	gi, ci := gis[0], cis[0]
	if gi.Profile != int(p.hw.devices[partition].Profile.Info.Id) || gi.Start != 0 || gi.Size != 1 {
		t.Errorf("GI %+v, want profile %d at 0:1", gi, p.hw.devices[partition].Profile.Info.Id)
	}
	if ci.GI != gi.ID || ci.Start != 0 || ci.Size != 1 {
		t.Errorf("CI %+v does not span GI %d", ci, gi.ID)
	}
	if gi.CapMinor != nvmlstate.GIAccessMinor(parent.Minor, gi.ID) || ci.CapMinor != nvmlstate.CIAccessMinor(parent.Minor, gi.ID, ci.ID) {
		t.Errorf("capability minors GI %d CI %d do not follow the formula", gi.CapMinor, ci.CapMinor)
	}
	for _, m := range []int{gi.CapMinor, ci.CapMinor} {
		if _, err := os.Stat(e.capNode(m)); err != nil {
			t.Errorf("capability node: %v", err)
		}
	}

	spec := readSpec(t, e.specPath(uidA))
	if len(spec.Devices) != 1 {
		t.Fatalf("spec has %d devices, want 1", len(spec.Devices))
	}
	node := func(rel string) *cdispec.DeviceNode {
		return &cdispec.DeviceNode{Path: "/dev/" + rel, HostPath: filepath.Join(e.root, "dev", rel)}
	}
	want := cdispec.ContainerEdits{
		Env: []string{"DRAKIT_DEVICE_GPU_2_MIG_1G10GB_0=" + ci.UUID},
		DeviceNodes: []*cdispec.DeviceNode{
			node(fmt.Sprintf("nvidia%d", parent.Minor)),
			node(fmt.Sprintf("nvidia-caps/nvidia-cap%d", gi.CapMinor)),
			node(fmt.Sprintf("nvidia-caps/nvidia-cap%d", ci.CapMinor)),
		},
	}
	if diff := cmp.Diff(want, spec.Devices[0].ContainerEdits); diff != "" {
		t.Errorf("MIG device edits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ci.UUID}, e.migUUIDs(t, parent.UUID)); diff != "" {
		t.Errorf("MIG devices seen through go-nvml (-want +got):\n%s", diff)
	}

	// The full-size profile overlaps the 1g partition.
	overlap := harnesstest.AllocatedClaim("full", uidB, harnesstest.AllocResult(testDriver, testNode, "gpu", full))
	res := harnesstest.Prepare(t, p, overlap)[overlap.UID]
	if !errors.Is(res.Err, ErrMIGPlacementBusy) || !errors.Is(res.Err, nvml.ERROR_INSUFFICIENT_RESOURCES) {
		t.Errorf("prepare of an overlapping placement: %v, want ErrMIGPlacementBusy and INSUFFICIENT_RESOURCES", res.Err)
	}
	if gis2, cis2 := e.instances(t, parent.Minor); !cmp.Equal(gis, gis2) || !cmp.Equal(cis, cis2) {
		t.Errorf("the failed claim changed the instances: GIs %+v CIs %+v", gis2, cis2)
	}
	if _, err := os.Stat(e.specPath(uidB)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed claim has a spec (stat: %v)", err)
	}

	// Restart: the new instance learns the claim from the checkpoint.
	p = e.start(t)
	if _, ok := p.hw.devices[partition]; !ok {
		t.Fatalf("after a restart GPU %d is no longer dynamic; devices: %v", parent.Minor, slices.Sorted(mapKeys(p.hw.devices)))
	}
	for attempt := range 2 {
		if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
			t.Fatalf("unprepare %d: %v", attempt, err)
		}
	}
	if diff := cmp.Diff(before, e.state(t)); diff != "" {
		t.Errorf("state file after unprepare (-before +after):\n%s", diff)
	}
	for _, m := range []int{gi.CapMinor, ci.CapMinor} {
		if _, err := os.Stat(e.capNode(m)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("capability node %d left after unprepare (stat: %v)", m, err)
		}
	}
	if _, err := os.Stat(e.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec left after unprepare (stat: %v)", err)
	}
	if got := e.migUUIDs(t, parent.UUID); len(got) != 0 {
		t.Errorf("MIG devices left after unprepare: %v", got)
	}
	if len(e.fatal.Causes()) != 0 {
		t.Errorf("fatal errors: %v", e.fatal.Causes())
	}
}

// TestEmulatedMIGRestartMidPrepare simulates a driver that died after NVML
// created the GPU instance (and a CI) but before the checkpoint recorded
// their ids: the checkpoint holds the incomplete record with the placement
// only. A new driver instance destroys them at start.
func TestEmulatedMIGRestartMidPrepare(t *testing.T) {
	e := newEmulatedMIG(t)
	p := e.start(t)
	const partition = "gpu-3-mig-3g40gb-4"
	d, ok := p.hw.devices[partition]
	if !ok {
		t.Fatalf("device %s is not published; devices: %v", partition, slices.Sorted(mapKeys(p.hw.devices)))
	}
	before := e.state(t)
	rec := &migRecord{
		ParentUUID: d.GPU.UUID, ParentMinor: d.GPU.Minor, ProfileIndex: d.Profile.Index,
		ProfileID: int(d.Profile.Info.Id), Slices: int(d.Profile.Info.SliceCount),
		Start: int(d.Placement.Start), Size: int(d.Placement.Size),
	}
	saveCheckpoint(t, e.pluginDir, map[string]preparedClaim{uidA: {Namespace: "test", Name: "mig", Incomplete: true,
		Devices: []preparedDevice{recorded("gpu", partition, rec)}}})
	// What the dead driver had created, through NVML as it would have.
	created := *rec
	if err := (&migOps{lib: e.lib, minorsPath: MIGMinorsPath(e.root)}).create(t.Context(), &created, func() error { return nil }); err != nil {
		t.Fatalf("create the orphan: %v", err)
	}
	if gis, cis := e.instances(t, d.GPU.Minor); len(gis) != 1 || len(cis) != 1 {
		t.Fatalf("orphan not created: GIs %+v CIs %+v", gis, cis)
	}

	p = e.start(t)
	if gis, cis := e.instances(t, d.GPU.Minor); len(gis)+len(cis) != 0 {
		t.Errorf("orphans left after the restart: GIs %+v CIs %+v", gis, cis)
	}
	if diff := cmp.Diff(before, e.state(t)); diff != "" {
		t.Errorf("state file after the restart (-before +after):\n%s", diff)
	}
	if len(p.Prepared()) != 0 {
		t.Errorf("checkpoint still lists %v", p.Prepared())
	}
	if _, ok := p.hw.devices[partition]; !ok {
		t.Error("the GPU whose orphans were destroyed is no longer published in dynamic mode")
	}
	// The kubelet retries the prepare, which now succeeds.
	claim := harnesstest.AllocatedClaim("mig", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", partition))
	if res := harnesstest.Prepare(t, p, claim)[claim.UID]; res.Err != nil {
		t.Fatalf("prepare after the restart: %v", res.Err)
	}
	if err := harnesstest.Unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, e.state(t)); diff != "" {
		t.Errorf("state file after unprepare (-before +after):\n%s", diff)
	}
}
