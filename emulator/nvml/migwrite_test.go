package nvml_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// requireMknod skips t where character devices cannot be created: the
// shim's create calls mknod the capability nodes, as the renderer does.
func requireMknod(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "probe")
	if err := unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("MIG mutations need mknod (root or CAP_MKNOD): %v", err)
	}
}

// dynamicMIGState is SampleState with H100 MIG tables and MIG mode on for
// minors 0 and 1 and no instances.
func dynamicMIGState() *nvmlstate.State {
	s := nvmltest.SampleState()
	nvmltest.AddMIG(s, 0, "H100-80GB-HBM3")
	nvmltest.AddMIG(s, 1, "H100-80GB-HBM3")
	return s
}

func readStateFile(t *testing.T, root string) *nvmlstate.State {
	t.Helper()
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatalf("the state the shim wrote: %v", err)
	}
	return s
}

// capNode describes /dev/nvidia-caps/nvidia-cap<minor>: "" when absent.
func capNode(t *testing.T, root string, minor int) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", minor)), &st); err != nil {
		return ""
	}
	return fmt.Sprintf("type %o mode %o dev %d:%d", st.Mode&syscall.S_IFMT, st.Mode&0o777,
		unix.Major(st.Rdev), unix.Minor(st.Rdev))
}

func wantCapNode(minor int) string {
	return fmt.Sprintf("type %o mode 444 dev %d:%d", syscall.S_IFCHR, render.NvidiaCapsMajor, minor)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func giProfileInfo(t *testing.T, d gonvml.Device, index int) gonvml.GpuInstanceProfileInfo {
	t.Helper()
	info, ret := d.GetGpuInstanceProfileInfo(index)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetGpuInstanceProfileInfo(%d): %v", index, ret)
	}
	return info
}

func ciProfileInfo(t *testing.T, gi gonvml.GpuInstance, index int) gonvml.ComputeInstanceProfileInfo {
	t.Helper()
	info, ret := gi.GetComputeInstanceProfileInfo(index, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetComputeInstanceProfileInfo(%d): %v", index, ret)
	}
	return info
}

func TestMIGCreateDestroy(t *testing.T) {
	requireMknod(t)
	s := dynamicMIGState()
	root := nvmltest.NewMIGRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	l4, _ := lib.DeviceGetHandleByIndex(2)
	info3g := giProfileInfo(t, gpu0, gonvml.GPU_INSTANCE_PROFILE_3_SLICE)
	info4g := giProfileInfo(t, gpu0, gonvml.GPU_INSTANCE_PROFILE_4_SLICE)

	gi, ret := gpu0.CreateGpuInstanceWithPlacement(&info3g, &gonvml.GpuInstancePlacement{Start: 0, Size: 4})
	if ret != gonvml.SUCCESS {
		t.Fatalf("CreateGpuInstanceWithPlacement(3g at 0): %v", ret)
	}
	giInfo, ret := gi.GetInfo()
	wantGI := gonvml.GpuInstanceInfo{Device: gpu0, Id: 2, ProfileId: 9, Placement: gonvml.GpuInstancePlacement{Start: 0, Size: 4}}
	if ret != gonvml.SUCCESS || giInfo != wantGI {
		t.Errorf("new GI GetInfo = %+v, %v; want %+v", giInfo, ret, wantGI)
	}
	ci3c := ciProfileInfo(t, gi, gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE)
	ci, ret := gi.CreateComputeInstance(&ci3c)
	if ret != gonvml.SUCCESS {
		t.Fatalf("CreateComputeInstance(3c): %v", ret)
	}
	giMinor, ciMinor := nvmlstate.GIAccessMinor(0, 2), nvmlstate.CIAccessMinor(0, 2, 0)
	uuid := gpu.DeriveMIGUUID(s.GPUs[0].UUID, 2, 0)

	// The state file, as nvmlstate reads it, holds the new GI and CI.
	got := readStateFile(t, root)
	wantState := dynamicMIGState()
	wantState.GPUInstances = []nvmlstate.GPUInstance{{GPU: 0, ID: 2, Profile: 9, Start: 0, Size: 4, CapMinor: giMinor}}
	wantState.ComputeInstances = []nvmlstate.ComputeInstance{{GPU: 0, GI: 2, ID: 0, Profile: 2, Start: 0, Size: 3, UUID: uuid, CapMinor: ciMinor}}
	if diff := cmp.Diff(wantState, got); diff != "" {
		t.Errorf("state after create (-want +got):\n%s", diff)
	}
	// Its capability files and nodes are the renderer's.
	caps := filepath.Join(root, "proc/driver/nvidia/capabilities/gpu0/mig/gi2")
	for path, minor := range map[string]int{filepath.Join(caps, "access"): giMinor, filepath.Join(caps, "ci0/access"): ciMinor} {
		want := fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\nDeviceFileModify: 1\n", minor)
		if got := readFile(t, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: %v, mode %v; want 0444", path, err, fi.Mode())
		}
		if got := capNode(t, root, minor); got != wantCapNode(minor) {
			t.Errorf("cap node %d: %q, want %q", minor, got, wantCapNode(minor))
		}
	}
	// The new MIG device is enumerated.
	mig, ret := gpu0.GetMigDeviceHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetMigDeviceHandleByIndex(0) after create: %v", ret)
	}
	if u, ret := mig.GetUUID(); u != uuid || ret != gonvml.SUCCESS {
		t.Errorf("new MIG device UUID = %q, %v; want %q", u, ret, uuid)
	}
	ciInfo, ret := ci.GetInfo()
	if ret != gonvml.SUCCESS || ciInfo.Device != mig || ciInfo.Id != 0 || ciInfo.Placement != (gonvml.ComputeInstancePlacement{Start: 0, Size: 3}) {
		t.Errorf("new CI GetInfo = %+v, %v", ciInfo, ret)
	}

	for _, tc := range []struct {
		name string
		call func() gonvml.Return
		want gonvml.Return
	}{
		{"3g at 0 again (overlap)", func() gonvml.Return {
			_, r := gpu0.CreateGpuInstanceWithPlacement(&info3g, &gonvml.GpuInstancePlacement{Start: 0, Size: 4})
			return r
		}, gonvml.ERROR_INSUFFICIENT_RESOURCES},
		{"4g at 0 (overlap)", func() gonvml.Return {
			_, r := gpu0.CreateGpuInstanceWithPlacement(&info4g, &gonvml.GpuInstancePlacement{Start: 0, Size: 4})
			return r
		}, gonvml.ERROR_INSUFFICIENT_RESOURCES},
		{"3g at 1 (not a placement of the profile)", func() gonvml.Return {
			_, r := gpu0.CreateGpuInstanceWithPlacement(&info3g, &gonvml.GpuInstancePlacement{Start: 1, Size: 4})
			return r
		}, gonvml.ERROR_INVALID_ARGUMENT},
		{"unknown GI profile", func() gonvml.Return {
			_, r := gpu0.CreateGpuInstance(&gonvml.GpuInstanceProfileInfo{Id: 99})
			return r
		}, gonvml.ERROR_INVALID_ARGUMENT},
		{"unknown CI profile", func() gonvml.Return {
			_, r := gi.CreateComputeInstance(&gonvml.ComputeInstanceProfileInfo{Id: 42})
			return r
		}, gonvml.ERROR_INVALID_ARGUMENT},
		{"CI in a full GI", func() gonvml.Return { _, r := gi.CreateComputeInstance(&ci3c); return r }, gonvml.ERROR_INSUFFICIENT_RESOURCES},
		{"GI on a GPU without MIG", func() gonvml.Return { _, r := l4.CreateGpuInstance(&info3g); return r }, gonvml.ERROR_NOT_SUPPORTED},
		{"MIG mode of a GPU without MIG", func() gonvml.Return { _, r := l4.SetMigMode(gonvml.DEVICE_MIG_DISABLE); return r }, gonvml.ERROR_NOT_SUPPORTED},
		{"destroy a GI with a CI", gi.Destroy, gonvml.ERROR_IN_USE},
		{"disable MIG with instances", func() gonvml.Return { _, r := gpu0.SetMigMode(gonvml.DEVICE_MIG_DISABLE); return r }, gonvml.ERROR_IN_USE},
	} {
		if ret := tc.call(); ret != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, ret, tc.want)
		}
	}
	// The failed calls changed nothing.
	if diff := cmp.Diff(wantState, readStateFile(t, root)); diff != "" {
		t.Errorf("state after failed calls (-want +got):\n%s", diff)
	}

	if ret := ci.Destroy(); ret != gonvml.SUCCESS {
		t.Fatalf("ComputeInstance Destroy: %v", ret)
	}
	if _, ret := gpu0.GetMigDeviceHandleByIndex(0); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("GetMigDeviceHandleByIndex(0) after destroy: %v, want NOT_FOUND", ret)
	}
	if ret := ci.Destroy(); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("second Destroy of the CI: %v, want INVALID_ARGUMENT", ret)
	}
	if ret := gi.Destroy(); ret != gonvml.SUCCESS {
		t.Fatalf("GpuInstance Destroy: %v", ret)
	}
	if diff := cmp.Diff(dynamicMIGState(), readStateFile(t, root)); diff != "" {
		t.Errorf("state after destroy (-want +got):\n%s", diff)
	}
	for _, minor := range []int{giMinor, ciMinor} {
		if got := capNode(t, root, minor); got != "" {
			t.Errorf("cap node %d left after destroy: %s", minor, got)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "proc/driver/nvidia/capabilities/gpu0")); !os.IsNotExist(err) {
		t.Errorf("capability directory of gpu0 left after destroy: %v", err)
	}

	// MIG mode: off, creating is NOT_SUPPORTED, on again.
	if act, ret := gpu0.SetMigMode(gonvml.DEVICE_MIG_DISABLE); ret != gonvml.SUCCESS || act != gonvml.SUCCESS {
		t.Fatalf("SetMigMode(disable) = %v, %v", ret, act)
	}
	if cur, pend, ret := gpu0.GetMigMode(); cur != 0 || pend != 0 || ret != gonvml.SUCCESS {
		t.Errorf("GetMigMode after disable = %d, %d, %v", cur, pend, ret)
	}
	if _, ret := gpu0.CreateGpuInstance(&info3g); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("CreateGpuInstance with MIG off: %v, want NOT_SUPPORTED", ret)
	}
	off := dynamicMIGState()
	off.GPUs[0].MIGMode = 0
	if diff := cmp.Diff(off, readStateFile(t, root)); diff != "" {
		t.Errorf("state with MIG off (-want +got):\n%s", diff)
	}
	if _, ret := gpu0.SetMigMode(gonvml.DEVICE_MIG_ENABLE); ret != gonvml.SUCCESS {
		t.Fatalf("SetMigMode(enable): %v", ret)
	}
	if _, ret := gpu0.CreateGpuInstance(&info3g); ret != gonvml.SUCCESS {
		t.Errorf("CreateGpuInstance with MIG on again: %v", ret)
	}
}

// TestMIGRewriteEndsWithEndRecord: the shim's rewrite of the state file
// ends it with exactly one end record, also when the file it read had CRLF
// line ends; and a mutation of a state file cut short fails and leaves it as
// it is.
func TestMIGRewriteEndsWithEndRecord(t *testing.T) {
	requireMknod(t)
	s := dynamicMIGState()
	root := nvmltest.NewMIGRoot(t, s)
	statePath := filepath.Join(root, nvmlstate.RelativePath)
	crlf := strings.ReplaceAll(readFile(t, statePath), "\n", "\r\n")
	nvmltest.WriteStateFile(t, root, []byte(crlf))
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	info1g := giProfileInfo(t, gpu0, gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	gi, ret := gpu0.CreateGpuInstanceWithPlacement(&info1g, &gonvml.GpuInstancePlacement{Start: 0, Size: 1})
	if ret != gonvml.SUCCESS {
		t.Fatalf("CreateGpuInstanceWithPlacement: %v", ret)
	}
	text := readFile(t, statePath)
	if !strings.HasSuffix(text, "\n"+nvmlstate.EndRecord+"\n") || strings.Count(text, "\n"+nvmlstate.EndRecord) != 1 {
		t.Errorf("state the shim wrote does not end with exactly one end record:\n%q", text)
	}
	got := readStateFile(t, root)
	if len(got.GPUInstances) != 1 || got.GPUInstances[0].Start != 0 {
		t.Errorf("GIs after create: %+v", got.GPUInstances)
	}

	// Another writer left the file cut short: the next change fails with
	// the state file's error and writes nothing.
	cut := text[:strings.Index(text, "\ngi\t")+1]
	nvmltest.WriteStateFile(t, root, []byte(cut))
	if ret := gi.Destroy(); ret != gonvml.ERROR_UNKNOWN {
		t.Errorf("Destroy over a truncated state file: %v, want ERROR_UNKNOWN", ret)
	}
	if after := readFile(t, statePath); after != cut {
		t.Errorf("a failed change rewrote the truncated state file:\n%s", after)
	}
}

// TestMIGCreateWithoutPlacement fills a GPU with 1g GIs created without a
// placement: the driver takes the highest free start first (6, 5, … 0),
// so GI ids follow the placement rule; the eighth does not fit.
func TestMIGCreateWithoutPlacement(t *testing.T) {
	requireMknod(t)
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewMIGRoot(t, dynamicMIGState()))
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	info1g := giProfileInfo(t, gpu1, gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	var got []gonvml.GpuInstanceInfo
	for range 7 {
		gi, ret := gpu1.CreateGpuInstance(&info1g)
		if ret != gonvml.SUCCESS {
			t.Fatalf("CreateGpuInstance(1g) #%d: %v", len(got), ret)
		}
		info, _ := gi.GetInfo()
		got = append(got, info)
	}
	var want []gonvml.GpuInstanceInfo
	for _, start := range []int{6, 5, 4, 3, 2, 1, 0} {
		id, _ := gpu.GIID(start, 1)
		want = append(want, gonvml.GpuInstanceInfo{Device: gpu1, Id: uint32(id), ProfileId: 19,
			Placement: gonvml.GpuInstancePlacement{Start: uint32(start), Size: 1}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GIs created without placement (-want +got):\n%s", diff)
	}
	if _, ret := gpu1.CreateGpuInstance(&info1g); ret != gonvml.ERROR_INSUFFICIENT_RESOURCES {
		t.Errorf("eighth 1g GI: %v, want INSUFFICIENT_RESOURCES", ret)
	}
	if n, ret := gpu1.GetGpuInstanceRemainingCapacity(&info1g); n != 0 || ret != gonvml.SUCCESS {
		t.Errorf("remaining 1g capacity = %d, %v; want 0", n, ret)
	}
}

// childEnv makes the test binary, run again, act as another process that
// creates a MIG device (TestMIGChildProcessCreates).
const childEnv = "DRAKIT_NVML_TEST_MIG_CHILD"

func TestMIGChildProcessCreates(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as the child of TestMIGSharedAcrossProcesses")
	}
	lib := newLib(t)
	initLib(t, lib, os.Getenv(nvmltest.RootEnv))
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	gi, ret := gpu0.CreateGpuInstanceWithPlacement(&gonvml.GpuInstanceProfileInfo{Id: 19}, &gonvml.GpuInstancePlacement{Start: 3, Size: 1})
	if ret != gonvml.SUCCESS {
		t.Fatalf("child: CreateGpuInstanceWithPlacement: %v", ret)
	}
	if _, ret := gi.CreateComputeInstance(&gonvml.ComputeInstanceProfileInfo{Id: 0}); ret != gonvml.SUCCESS {
		t.Fatalf("child: CreateComputeInstance: %v", ret)
	}
}

// TestMIGSharedAcrossProcesses: an instance another process creates shows up
// in this process's NVML, and this process can destroy it.
func TestMIGSharedAcrossProcesses(t *testing.T) {
	requireMknod(t)
	s := dynamicMIGState()
	root := nvmltest.NewMIGRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	if _, ret := gpu0.GetMigDeviceHandleByIndex(0); ret != gonvml.ERROR_NOT_FOUND {
		t.Fatalf("before the child: GetMigDeviceHandleByIndex(0) = %v, want NOT_FOUND", ret)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMIGChildProcessCreates$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", nvmltest.RootEnv+"="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	mig, ret := gpu0.GetMigDeviceHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("after the child: GetMigDeviceHandleByIndex(0) = %v", ret)
	}
	id, _ := gpu.GIID(3, 1)
	if u, _ := mig.GetUUID(); u != gpu.DeriveMIGUUID(s.GPUs[0].UUID, id, 0) {
		t.Errorf("MIG device the child created has UUID %q, want %q", u, gpu.DeriveMIGUUID(s.GPUs[0].UUID, id, 0))
	}
	gi, ret := gpu0.GetGpuInstanceById(id)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetGpuInstanceById(%d): %v", id, ret)
	}
	ci, ret := gi.GetComputeInstanceById(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetComputeInstanceById(0): %v", ret)
	}
	if r1, r2 := ci.Destroy(), gi.Destroy(); r1 != gonvml.SUCCESS || r2 != gonvml.SUCCESS {
		t.Fatalf("destroying the child's instances: %v, %v", r1, r2)
	}
	if diff := cmp.Diff(s, readStateFile(t, root)); diff != "" {
		t.Errorf("state after destroy (-want +got):\n%s", diff)
	}
}

// treeEntry is what compareTrees compares of one path.
type treeEntry struct {
	Mode    fs.FileMode
	Rdev    uint64
	Content string
}

func readTree(t *testing.T, root string, skip map[string]bool) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if skip[rel] {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := treeEntry{Mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.Content = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Content, _ = os.Readlink(path)
		case fi.Mode()&fs.ModeDevice != 0:
			e.Rdev = fi.Sys().(*syscall.Stat_t).Rdev
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMIGCreateMatchesRender creates through the shim the static layouts of
// the mixed-mig profile on a root rendered without them: the state file,
// the capability files and the nodes are then exactly what the renderer
// writes for the static layouts.
func TestMIGCreateMatchesRender(t *testing.T) {
	requireMknod(t)
	static, err := profile.Load("mixed-mig")
	if err != nil {
		t.Fatal(err)
	}
	staticRoot := filepath.Join(t.TempDir(), "static")
	if err := render.Render(context.Background(), static, render.Options{Root: staticRoot}); err != nil {
		t.Fatal(err)
	}
	dynamic, _ := profile.Load("mixed-mig")
	layouts := map[int][]gpu.GPUInstance{}
	for i := range dynamic.Spec.GPUs {
		g := &dynamic.Spec.GPUs[i]
		gis, err := static.Spec.GPUs[i].MIGLayout()
		if err != nil {
			t.Fatal(err)
		}
		if len(gis) > 0 {
			layouts[*g.Minor] = gis
			g.MIG = &gpu.MIGConfig{Mode: gpu.MIGEnabled}
		}
	}
	if len(layouts) == 0 {
		t.Fatal("mixed-mig has no static MIG layout")
	}
	dynamicRoot := filepath.Join(t.TempDir(), "dynamic")
	if err := render.Render(context.Background(), dynamic, render.Options{Root: dynamicRoot}); err != nil {
		t.Fatal(err)
	}
	lib := newLib(t)
	initLib(t, lib, dynamicRoot)
	for minor, gis := range layouts {
		gpu, ret := lib.DeviceGetHandleByPciBusId(busIDOf(t, static, minor))
		if ret != gonvml.SUCCESS {
			t.Fatalf("GPU minor %d: %v", minor, ret)
		}
		for _, want := range gis {
			gi, ret := gpu.CreateGpuInstanceWithPlacement(&gonvml.GpuInstanceProfileInfo{Id: uint32(want.Profile.ID)},
				&gonvml.GpuInstancePlacement{Start: uint32(want.Start), Size: uint32(want.Profile.MemorySlices)})
			if ret != gonvml.SUCCESS {
				t.Fatalf("GPU %d: create GI %s at %d: %v", minor, want.Profile.Name, want.Start, ret)
			}
			for _, c := range want.ComputeInstances {
				_, ret := gi.CreateComputeInstanceWithPlacement(&gonvml.ComputeInstanceProfileInfo{Id: uint32(c.Profile.ID)},
					&gonvml.ComputeInstancePlacement{Start: uint32(c.Start), Size: uint32(c.Profile.Slices)})
				if ret != gonvml.SUCCESS {
					t.Fatalf("GPU %d GI %d: create CI %s at %d: %v", minor, want.ID, c.Profile.Name, c.Start, ret)
				}
			}
		}
	}
	// The lock file exists once a mutation took it, and the generation
	// counts the writes, which differ.
	skip := map[string]bool{"run/drakit-emulator/nvml.state.lock": true, nvmlstate.GenerationRelativePath: true}
	if diff := cmp.Diff(readTree(t, staticRoot, skip), readTree(t, dynamicRoot, skip)); diff != "" {
		t.Errorf("root after creating the layouts through NVML (-rendered +created):\n%s", diff)
	}
}

// busIDOf is the NVML bus id of p's GPU with minor.
func busIDOf(t *testing.T, p *profile.Profile, minor int) string {
	t.Helper()
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range topo.GPUs {
		if *g.GPU.Minor == minor {
			return g.Function.Address.String()
		}
	}
	t.Fatalf("no GPU with minor %d", minor)
	return ""
}
