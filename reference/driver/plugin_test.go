package driver

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

const (
	uidA = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB = "bbbbbbbb-0000-0000-0000-000000000002"
)

func prepareOne(t *testing.T, p *plugin, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	res, err := p.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("PrepareResourceClaims: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("PrepareResourceClaims returned %d results for 1 claim", len(res))
	}
	r, ok := res[claim.UID]
	if !ok {
		t.Fatalf("PrepareResourceClaims: no result for claim %s", claim.UID)
	}
	return r
}

func unprepare(t *testing.T, p *plugin, uids ...string) map[types.UID]error {
	t.Helper()
	var objs []kubeletplugin.NamespacedObject
	for _, uid := range uids {
		objs = append(objs, kubeletplugin.NamespacedObject{UID: types.UID(uid)})
	}
	res, err := p.UnprepareResourceClaims(t.Context(), objs)
	if err != nil {
		t.Fatalf("UnprepareResourceClaims: %v", err)
	}
	if len(res) != len(uids) {
		t.Fatalf("UnprepareResourceClaims returned %d results for %d claims", len(res), len(uids))
	}
	return res
}

// dirState is every file of a directory with its content, to compare states.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func TestPrepareWritesCDISpec(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	got := prepareOne(t, p, allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	wantID := "k8s.gpu.drakit.dev/claim=" + uidA + "-gpu-3"
	want := []kubeletplugin.Device{{Requests: []string{"gpu"}, PoolName: testNode, DeviceName: "gpu-3", CDIDeviceIDs: []string{wantID}}}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}

	spec, err := cdiapi.ReadSpec(env.specPath(uidA), 0)
	if err != nil {
		t.Fatalf("read back CDI spec: %v", err)
	}
	ro := []string{"ro", "nosuid", "nodev", "bind"}
	wantSpec := &cdispec.Spec{
		Version: "0.5.0",
		Kind:    "k8s.gpu.drakit.dev/claim",
		Devices: []cdispec.Device{{
			Name: uidA + "-gpu-3",
			ContainerEdits: cdispec.ContainerEdits{
				Env:         []string{"DRAKIT_DEVICE_GPU_3=GPU-33333333-1111-2222-3333-444444444444"},
				DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidia3", HostPath: filepath.Join(env.root.dir, "dev/nvidia3")}},
			},
		}},
		ContainerEdits: cdispec.ContainerEdits{
			DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidiactl", HostPath: filepath.Join(env.root.dir, "dev/nvidiactl")}},
			Mounts: []*cdispec.Mount{
				{HostPath: env.root.lib, ContainerPath: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", Options: ro},
				{HostPath: filepath.Join(env.root.dir, "run/drakit-emulator"), ContainerPath: "/run/drakit-emulator", Options: ro},
			},
		},
	}
	if diff := cmp.Diff(wantSpec, spec.Spec); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
	}
	if spec.GetDevice(uidA+"-gpu-3") == nil || spec.GetDevice(uidA+"-gpu-3").GetQualifiedName() != wantID {
		t.Errorf("CDI spec does not define device %s", wantID)
	}
}

// TestPrepareCDISpecInjects applies the spec to an OCI spec the way a
// container runtime does, which needs real character devices.
func TestPrepareCDISpecInjects(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	if !env.root.charDevices {
		t.Skip("mknod is not permitted; CDI injection needs real device nodes")
	}
	p := env.plugin(t)
	got := prepareOne(t, p, allocatedClaim("one", uidA,
		allocResult(testDriver, testNode, "a", "gpu-0"), allocResult(testDriver, testNode, "b", "gpu-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	var ids []string
	for _, d := range got.Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(env.cdiDir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	ociSpec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(ociSpec, ids...); err != nil {
		t.Fatalf("inject %v (unresolved %v): %v", ids, unresolved, err)
	}
	type dev struct {
		Path         string
		Major, Minor int64
	}
	var devs []dev
	for _, d := range ociSpec.Linux.Devices {
		devs = append(devs, dev{d.Path, d.Major, d.Minor})
	}
	wantDevs := []dev{{"/dev/nvidiactl", 195, 255}, {"/dev/nvidia0", 195, 0}, {"/dev/nvidia3", 195, 3}}
	sortBy := func(a, b dev) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(devs, sortBy)
	slices.SortFunc(wantDevs, sortBy)
	if diff := cmp.Diff(wantDevs, devs); diff != "" {
		t.Errorf("OCI devices (-want +got):\n%s", diff)
	}
	env0 := slices.Sorted(slices.Values(ociSpec.Process.Env))
	wantEnv := []string{
		"DRAKIT_DEVICE_GPU_0=GPU-00000000-1111-2222-3333-444444444444",
		"DRAKIT_DEVICE_GPU_3=GPU-33333333-1111-2222-3333-444444444444",
	}
	if diff := cmp.Diff(wantEnv, env0); diff != "" {
		t.Errorf("OCI env (-want +got):\n%s", diff)
	}
	var mounts []string
	for _, m := range ociSpec.Mounts {
		mounts = append(mounts, m.Source+" -> "+m.Destination)
	}
	wantMounts := []string{
		filepath.Join(env.root.dir, "run/drakit-emulator") + " -> /run/drakit-emulator",
		env.root.lib + " -> /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
	}
	slices.Sort(mounts)
	slices.Sort(wantMounts)
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("OCI mounts (-want +got):\n%s", diff)
	}
}

func TestPrepareWithoutStateFile(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	if err := os.Remove(filepath.Join(env.root.dir, containerStatePath)); err != nil {
		t.Fatal(err)
	}
	p := env.plugin(t)
	if r := prepareOne(t, p, allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	spec, err := cdiapi.ReadSpec(env.specPath(uidA), 0)
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, m := range spec.ContainerEdits.Mounts {
		targets = append(targets, m.ContainerPath)
	}
	if diff := cmp.Diff([]string{"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"}, targets); diff != "" {
		t.Errorf("mounts without a state file (-want +got):\n%s", diff)
	}
}

func TestPrepareTwiceIsPrepareOnce(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	claim := allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"), allocResult(testDriver, testNode, "gpu", "gpu-1"))
	first := prepareOne(t, p, claim)
	if first.Err != nil {
		t.Fatalf("first prepare: %v", first.Err)
	}
	cdiAfterFirst, cpAfterFirst := dirState(t, env.cdiDir), dirState(t, env.pluginDir)

	second := prepareOne(t, p, claim)
	if second.Err != nil {
		t.Fatalf("second prepare: %v", second.Err)
	}
	if diff := cmp.Diff(first.Devices, second.Devices); diff != "" {
		t.Errorf("second prepare returned other devices (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(cdiAfterFirst, dirState(t, env.cdiDir)); diff != "" {
		t.Errorf("CDI dir changed on the second prepare (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(cpAfterFirst, dirState(t, env.pluginDir)); diff != "" {
		t.Errorf("plugin dir changed on the second prepare (-first +second):\n%s", diff)
	}
	if len(cdiAfterFirst) != 1 {
		t.Errorf("CDI dir has %d files, want 1: %v", len(cdiAfterFirst), cdiAfterFirst)
	}
}

func TestUnprepare(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	if r := prepareOne(t, p, allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	for i := range 2 {
		if err := unprepare(t, p, uidA)[uidA]; err != nil {
			t.Fatalf("unprepare #%d: %v", i+1, err)
		}
		if files := dirState(t, env.cdiDir); len(files) != 0 {
			t.Errorf("after unprepare #%d the CDI dir still has %v", i+1, files)
		}
		if len(p.prepared) != 0 {
			t.Errorf("after unprepare #%d the plugin still remembers %v", i+1, p.prepared)
		}
	}
	// The checkpoint on disk agrees.
	if claims := env.plugin(t).prepared; len(claims) != 0 {
		t.Errorf("checkpoint still lists %v", claims)
	}
}

func TestUnprepareUnknownClaim(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	if r := prepareOne(t, p, allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
		t.Fatalf("prepare: %v", r.Err)
	}
	res := unprepare(t, p, uidB)
	if err := res[uidB]; err != nil {
		t.Errorf("unprepare of an unknown claim: %v", err)
	}
	if _, err := os.Stat(env.specPath(uidA)); err != nil {
		t.Errorf("unprepare of another claim touched claim A's spec: %v", err)
	}
	if _, ok := p.prepared[uidA]; !ok {
		t.Errorf("unprepare of another claim dropped claim A")
	}
}

// TestUnprepareRemovesOrphanSpec covers a crash after writing the spec and
// before checkpointing it.
func TestUnprepareRemovesOrphanSpec(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	if err := p.cdi.write(uidA, []cdiDevice{{name: "gpu-0", uuid: testInventory().GPUs[0].UUID, nodes: []string{"nvidia0"}}}); err != nil {
		t.Fatal(err)
	}
	if err := unprepare(t, p, uidA)[uidA]; err != nil {
		t.Fatalf("unprepare: %v", err)
	}
	if _, err := os.Stat(env.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan spec still exists (stat: %v)", err)
	}
}

func TestRestartBetweenPrepareAndUnprepare(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	claim := allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-1"))
	first := prepareOne(t, env.plugin(t), claim)
	if first.Err != nil {
		t.Fatalf("prepare: %v", first.Err)
	}

	restarted := env.plugin(t)
	want := map[string]preparedClaim{uidA: {Namespace: "test", Name: "one", Devices: []preparedDevice{{
		Request: "gpu", Pool: testNode, Device: "gpu-1", CDIDeviceIDs: []string{"k8s.gpu.drakit.dev/claim=" + uidA + "-gpu-1"},
	}}}}
	if diff := cmp.Diff(want, restarted.prepared); diff != "" {
		t.Errorf("state after restart (-want +got):\n%s", diff)
	}
	// The restarted driver knows gpu-1 is taken.
	other := prepareOne(t, restarted, allocatedClaim("two", uidB, allocResult(testDriver, testNode, "gpu", "gpu-1")))
	if other.Err == nil || !strings.Contains(other.Err.Error(), "already prepared for claim test/one") {
		t.Errorf("preparing gpu-1 for a second claim after restart: got error %v, want 'already prepared for claim test/one'", other.Err)
	}
	if err := unprepare(t, restarted, uidA)[uidA]; err != nil {
		t.Fatalf("unprepare after restart: %v", err)
	}
	if _, err := os.Stat(env.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec still exists after unprepare (stat: %v)", err)
	}
	if claims := env.plugin(t).prepared; len(claims) != 0 {
		t.Errorf("checkpoint after unprepare still lists %v", claims)
	}
}

func TestPrepareMultiDeviceClaim(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	got := prepareOne(t, p, allocatedClaim("multi", uidA,
		allocResult(testDriver, testNode, "big", "gpu-0"),
		allocResult(testDriver, testNode, "big", "gpu-1"),
		allocResult(testDriver, testNode, "small/first", "gpu-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	id := func(dev string) []string { return []string{"k8s.gpu.drakit.dev/claim=" + uidA + "-" + dev} }
	want := []kubeletplugin.Device{
		{Requests: []string{"big"}, PoolName: testNode, DeviceName: "gpu-0", CDIDeviceIDs: id("gpu-0")},
		{Requests: []string{"big"}, PoolName: testNode, DeviceName: "gpu-1", CDIDeviceIDs: id("gpu-1")},
		{Requests: []string{"small/first"}, PoolName: testNode, DeviceName: "gpu-3", CDIDeviceIDs: id("gpu-3")},
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	spec, err := cdiapi.ReadSpec(env.specPath(uidA), 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range spec.Devices {
		names = append(names, d.Name+" "+strings.Join(d.ContainerEdits.Env, ","))
	}
	wantNames := []string{
		uidA + "-gpu-0 DRAKIT_DEVICE_GPU_0=GPU-00000000-1111-2222-3333-444444444444",
		uidA + "-gpu-1 DRAKIT_DEVICE_GPU_1=GPU-11111111-1111-2222-3333-444444444444",
		uidA + "-gpu-3 DRAKIT_DEVICE_GPU_3=GPU-33333333-1111-2222-3333-444444444444",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("CDI devices (-want +got):\n%s", diff)
	}
}

func TestPrepareIgnoresOtherDrivers(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	mixed := allocatedClaim("mixed", uidA,
		allocResult("nic.example.com", "other-pool", "nic", "nic-0"),
		allocResult(testDriver, testNode, "gpu", "gpu-0"))
	foreign := allocatedClaim("foreign", uidB, allocResult("nic.example.com", testNode, "nic", "gpu-1"))
	res, err := p.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{mixed, foreign})
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]kubeletplugin.PrepareResult{
		uidA: {Devices: []kubeletplugin.Device{{Requests: []string{"gpu"}, PoolName: testNode, DeviceName: "gpu-0",
			CDIDeviceIDs: []string{"k8s.gpu.drakit.dev/claim=" + uidA + "-gpu-0"}}}},
		uidB: {Devices: []kubeletplugin.Device{}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(env.specPath(uidB)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim without devices of this driver got a CDI spec (stat: %v)", err)
	}
	spec, err := cdiapi.ReadSpec(env.specPath(uidA), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Devices) != 1 {
		t.Errorf("CDI spec has %d devices, want only gpu-0", len(spec.Devices))
	}
}

func TestPreparePerClaimErrors(t *testing.T) {
	t.Parallel()
	admin := allocResult(testDriver, testNode, "gpu", "gpu-0")
	admin.AdminAccess = new(true)
	for _, tc := range []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		wantErr string // empty: success
	}{
		{"not allocated", &resourceapi.ResourceClaim{}, "not allocated"},
		{"other pool", allocatedClaim("c", uidB, allocResult(testDriver, "127.0.0.2", "gpu", "gpu-1")), "device gpu-1 is in pool 127.0.0.2, this node's pool is 127.0.0.1"},
		{"unknown device", allocatedClaim("c", uidB, allocResult(testDriver, testNode, "gpu", "gpu-2")), "device gpu-2 is not on this node"},
		{"device taken", allocatedClaim("c", uidB, allocResult(testDriver, testNode, "gpu", "gpu-0")), "device gpu-0 is already prepared for claim test/held (" + uidA + ")"},
		{"admin access shares", allocatedClaim("c", uidB, admin), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newPluginEnv(t)
			p := env.plugin(t)
			held := allocatedClaim("held", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"))
			if tc.claim.UID == "" {
				tc.claim.UID = uidB
			}
			res, err := p.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{held, tc.claim})
			if err != nil {
				t.Fatal(err)
			}
			if res[uidA].Err != nil {
				t.Errorf("the other claim in the call failed too: %v", res[uidA].Err)
			}
			got := res[uidB].Err
			switch {
			case tc.wantErr == "" && got != nil:
				t.Fatalf("unexpected error: %v", got)
			case tc.wantErr != "" && (got == nil || !strings.Contains(got.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", got, tc.wantErr)
			}
			_, statErr := os.Stat(env.specPath(uidB))
			_, remembered := p.prepared[uidB]
			if wantSpec := tc.wantErr == ""; wantSpec != (statErr == nil) || wantSpec != remembered {
				t.Errorf("spec written: %v, checkpointed: %v; want both %v", statErr == nil, remembered, wantSpec)
			}
		})
	}
}

func TestCorruptCheckpointStopsDriver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(string) string
	}{
		{"not json", func(string) string { return "{" }},
		{"wrong version", func(s string) string { return strings.Replace(s, checkpointVersion, "drakit.dev/checkpoint/v0", 1) }},
		{"checksum mismatch", func(s string) string { return strings.Replace(s, `"gpu-0"`, `"gpu-1"`, 1) }},
		{"unknown field", func(s string) string { return strings.Replace(s, `"version"`, `"extra": 1, "version"`, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newPluginEnv(t)
			if r := prepareOne(t, env.plugin(t), allocatedClaim("one", uidA, allocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
				t.Fatal(r.Err)
			}
			path := filepath.Join(env.pluginDir, checkpointFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mutated := tc.mutate(string(data))
			if mutated == string(data) {
				t.Fatal("mutation did not change the checkpoint")
			}
			writeFile(t, path, mutated)
			_, err = env.tryPlugin()
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want ErrCorruptCheckpoint naming %s", err, path)
			}
		})
	}
}

func TestHandleError(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	recoverable := errors.Join(kubeletplugin.ErrRecoverable, errors.New("slice rejected"))
	p.HandleError(t.Context(), recoverable, "publishing")
	if len(env.fatal.causes) != 0 {
		t.Fatalf("a recoverable error stopped the driver: %v", env.fatal.causes)
	}
	p.HandleError(t.Context(), errors.New("socket gone"), "DRA gRPC server failed")
	if len(env.fatal.causes) != 1 || env.fatal.causes[0].Error() != "DRA gRPC server failed: socket gone" {
		t.Errorf("fatal causes %v, want one 'DRA gRPC server failed: socket gone'", env.fatal.causes)
	}
}
