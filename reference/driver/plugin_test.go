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
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	uidA = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB = "bbbbbbbb-0000-0000-0000-000000000002"
)

func TestPrepareWritesCDISpec(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-3")))
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

// TestPrepareDeviceNodesOnly: with --device-nodes-only the spec gives the
// device's node and nvidiactl, and nothing a driver that leaves NVML to the
// node's container stack would give: no library, no state, no variable.
func TestPrepareDeviceNodesOnly(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	p.hw.deviceNodesOnly = true
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	spec, err := cdiapi.ReadSpec(env.specPath(uidA), 0)
	if err != nil {
		t.Fatalf("read back CDI spec: %v", err)
	}
	wantSpec := &cdispec.Spec{
		Version: "0.5.0",
		Kind:    "k8s.gpu.drakit.dev/claim",
		Devices: []cdispec.Device{{
			Name: uidA + "-gpu-3",
			ContainerEdits: cdispec.ContainerEdits{
				DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidia3", HostPath: filepath.Join(env.root.dir, "dev/nvidia3")}},
			},
		}},
		ContainerEdits: cdispec.ContainerEdits{
			DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidiactl", HostPath: filepath.Join(env.root.dir, "dev/nvidiactl")}},
		},
	}
	if diff := cmp.Diff(wantSpec, spec.Spec); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
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
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA,
		harnesstest.AllocResult(testDriver, testNode, "a", "gpu-0"), harnesstest.AllocResult(testDriver, testNode, "b", "gpu-3")))
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
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
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

// TestPrepareMultiDeviceClaim: every device of the claim is a CDI device
// with its own variable, in the order of the results, each device once.
func TestPrepareMultiDeviceClaim(t *testing.T) {
	t.Parallel()
	env := newPluginEnv(t)
	p := env.plugin(t)
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("multi", uidA,
		harnesstest.AllocResult(testDriver, testNode, "big", "gpu-3"),
		harnesstest.AllocResult(testDriver, testNode, "big", "gpu-0"),
		harnesstest.AllocResult(testDriver, testNode, "small/first", "gpu-1"),
		harnesstest.AllocResult(testDriver, testNode, "small/again", "gpu-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
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
		uidA + "-gpu-3 DRAKIT_DEVICE_GPU_3=GPU-33333333-1111-2222-3333-444444444444",
		uidA + "-gpu-0 DRAKIT_DEVICE_GPU_0=GPU-00000000-1111-2222-3333-444444444444",
		uidA + "-gpu-1 DRAKIT_DEVICE_GPU_1=GPU-11111111-1111-2222-3333-444444444444",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("CDI devices (-want +got):\n%s", diff)
	}
}

// TestDriverCheckpoint: the driver's checkpoint is in the plugin directory,
// versioned and checksummed; one that cannot be trusted stops the driver.
func TestDriverCheckpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(string) string
	}{
		{"wrong version", func(s string) string {
			return strings.Replace(s, `"drakit.dev/checkpoint/v1"`, `"drakit.dev/checkpoint/v0"`, 1)
		}},
		{"checksum mismatch", func(s string) string { return strings.Replace(s, `"gpu-0"`, `"gpu-1"`, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newPluginEnv(t)
			if r := harnesstest.PrepareOne(t, env.plugin(t), harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0"))); r.Err != nil {
				t.Fatal(r.Err)
			}
			path := filepath.Join(env.pluginDir, "checkpoint.json")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mutated := tc.mutate(string(data))
			if mutated == string(data) {
				t.Fatal("mutation did not change the checkpoint")
			}
			writeFile(t, path, mutated)
			_, err = env.tryPlugin(t)
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want ErrCorruptCheckpoint naming %s", err, path)
			}
		})
	}
}
