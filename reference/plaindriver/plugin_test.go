package plaindriver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// wantEdits is what device dev-<i> injects, built independently of the
// driver's code.
func wantEdits(stateDir string, i int) cdispec.ContainerEdits {
	n := strconv.Itoa(i)
	name := "dev-" + n
	return cdispec.ContainerEdits{
		Env: []string{"PLAIN_DEVICE_" + n + "=" + name, "PLAIN_DEVICE_" + n + "_SERIAL=PLN-12ca17b4-" + n},
		Mounts: []*cdispec.Mount{{
			HostPath: filepath.Join(stateDir, "devices", name), ContainerPath: "/var/run/plain/" + name,
			Options: []string{"ro", "nosuid", "nodev", "noexec", "bind"},
		}},
	}
}

func readSpec(t *testing.T, path string) *cdispec.Spec {
	t.Helper()
	spec, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatalf("read back CDI spec: %v", err)
	}
	return spec.Spec
}

func TestPrepareWritesCDISpec(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	got := harnesstest.PrepareOne(t, p, claimOf("two", uidA, "dev-1", "dev-3"))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	id := func(d string) string { return "k8s.plain.drakit.dev/claim=" + uidA + "-" + d }
	want := []kubeletplugin.Device{
		{Requests: []string{"req0"}, PoolName: testNode, DeviceName: "dev-1", CDIDeviceIDs: []string{id("dev-1")}},
		{Requests: []string{"req1"}, PoolName: testNode, DeviceName: "dev-3", CDIDeviceIDs: []string{id("dev-3")}},
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	wantSpec := &cdispec.Spec{
		Version: "0.3.0",
		Kind:    "k8s.plain.drakit.dev/claim",
		Devices: []cdispec.Device{
			{Name: uidA + "-dev-1", ContainerEdits: wantEdits(env.stateDir, 1)},
			{Name: uidA + "-dev-3", ContainerEdits: wantEdits(env.stateDir, 3)},
		},
	}
	if diff := cmp.Diff(wantSpec, readSpec(t, env.specPath(uidA))); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
	}
	for _, d := range []string{"dev-0", "dev-1", "dev-2", "dev-3"} {
		data, err := os.ReadFile(filepath.Join(env.stateDir, "devices", d, "serial"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "PLN-12ca17b4-" + strings.TrimPrefix(d, "dev-") + "\n"; string(data) != want {
			t.Errorf("%s/serial is %q, want %q", d, data, want)
		}
	}
}

// TestCDISpecInjects applies the spec to an OCI spec as a container
// runtime does: exactly the allocated devices' environment and mounts, no
// device node, no hook.
func TestCDISpecInjects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		defect  Defect
		devices []string
		wantEnv []string
		// wantMounts are the container paths, in order.
		wantMounts []string
	}{
		{"correct", "", []string{"dev-1", "dev-3"},
			[]string{"PLAIN_DEVICE_1=dev-1", "PLAIN_DEVICE_1_SERIAL=PLN-12ca17b4-1", "PLAIN_DEVICE_3=dev-3", "PLAIN_DEVICE_3_SERIAL=PLN-12ca17b4-3"},
			[]string{"/var/run/plain/dev-1", "/var/run/plain/dev-3"}},
		{"extra-device", DefectExtraDevice, []string{"dev-1", "dev-3"},
			[]string{"PLAIN_DEVICE_1=dev-1", "PLAIN_DEVICE_1_SERIAL=PLN-12ca17b4-1", "PLAIN_DEVICE_0=dev-0", "PLAIN_DEVICE_0_SERIAL=PLN-12ca17b4-0",
				"PLAIN_DEVICE_3=dev-3", "PLAIN_DEVICE_3_SERIAL=PLN-12ca17b4-3"},
			[]string{"/var/run/plain/dev-1", "/var/run/plain/dev-0", "/var/run/plain/dev-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, tc.defect)
			p := env.plugin(t)
			got := harnesstest.PrepareOne(t, p, claimOf("two", uidA, tc.devices...))
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
			if diff := cmp.Diff(tc.wantEnv, ociSpec.Process.Env); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
			var mounts []string
			for _, m := range ociSpec.Mounts {
				mounts = append(mounts, m.Destination)
				if want := filepath.Join(env.stateDir, "devices", filepath.Base(m.Destination)); m.Source != want {
					t.Errorf("mount at %s from %s, want from %s", m.Destination, m.Source, want)
				}
				if diff := cmp.Diff([]string{"ro", "nosuid", "nodev", "noexec", "bind"}, m.Options); diff != "" {
					t.Errorf("mount at %s options (-want +got):\n%s", m.Destination, diff)
				}
			}
			if diff := cmp.Diff(tc.wantMounts, mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if len(ociSpec.Linux.Devices) != 0 || ociSpec.Hooks != nil {
				t.Errorf("injected device nodes %v or hooks %v, want none", ociSpec.Linux.Devices, ociSpec.Hooks)
			}
		})
	}
}

// TestExtraDeviceDefect: the first device of the claim's spec carries the
// edits of exactly one device the claim was not allocated, the lowest
// index that is free of the claim; the others are unchanged.
func TestExtraDeviceDefect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		devices   int
		claim     []int
		wantExtra int // -1: none
	}{
		{"skips-allocated", 4, []int{0, 1}, 2},
		{"lowest-free", 4, []int{3, 2}, 0},
		{"one-device", 4, []int{0}, 1},
		{"claim-has-every-device", 2, []int{1, 0}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, DefectExtraDevice)
			env.devices = tc.devices
			p := env.plugin(t)
			var names []string
			for _, i := range tc.claim {
				names = append(names, "dev-"+strconv.Itoa(i))
			}
			if got := harnesstest.PrepareOne(t, p, claimOf("c", uidA, names...)); got.Err != nil {
				t.Fatalf("prepare: %v", got.Err)
			}
			want := &cdispec.Spec{Version: "0.3.0", Kind: "k8s.plain.drakit.dev/claim"}
			for j, i := range tc.claim {
				edits := wantEdits(env.stateDir, i)
				if j == 0 && tc.wantExtra >= 0 {
					x := wantEdits(env.stateDir, tc.wantExtra)
					edits.Env = append(edits.Env, x.Env...)
					edits.Mounts = append(edits.Mounts, x.Mounts...)
				}
				want.Devices = append(want.Devices, cdispec.Device{Name: uidA + "-" + names[j], ContainerEdits: edits})
			}
			if diff := cmp.Diff(want, readSpec(t, env.specPath(uidA))); diff != "" {
				t.Errorf("CDI spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLeaveCDISpecDefect: unprepare removes the claim's spec, also one a
// crash left without a checkpoint entry; with leave-cdi-spec both stay
// while the claim is forgotten and its devices are free again.
func TestLeaveCDISpecDefect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		defect    Defect
		wantSpecs bool
	}{{"", false}, {DefectLeaveCDISpec, true}} {
		t.Run("defect="+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, tc.defect)
			p := env.plugin(t)
			if got := harnesstest.PrepareOne(t, p, claimOf("a", uidA, "dev-0", "dev-1")); got.Err != nil {
				t.Fatalf("prepare: %v", got.Err)
			}
			// A spec written just before a crash: no checkpoint entry.
			stray := env.specPath(uidB)
			if err := os.WriteFile(stray, []byte(`{"cdiVersion":"0.3.0","kind":"k8s.plain.drakit.dev/claim","devices":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			for uid, err := range harnesstest.Unprepare(t, p, uidA, uidB) {
				if err != nil {
					t.Errorf("unprepare %s: %v", uid, err)
				}
			}
			for _, path := range []string{env.specPath(uidA), stray} {
				_, err := os.Stat(path)
				if exists := err == nil; exists != tc.wantSpecs {
					t.Errorf("%s exists=%v after unprepare, want %v (stat: %v)", filepath.Base(path), exists, tc.wantSpecs, err)
				}
			}
			if claims := env.plugin(t).Prepared(); len(claims) != 0 {
				t.Errorf("claims still checkpointed after unprepare: %v", claims)
			}
			if got := harnesstest.PrepareOne(t, p, claimOf("next", "dddddddd-0000-0000-0000-000000000004", "dev-0")); got.Err != nil {
				t.Errorf("prepare after unprepare: %v", got.Err)
			}
		})
	}
}

func TestCheckpointFormat(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	if got := harnesstest.PrepareOne(t, p, claimOf("a", uidA, "dev-3")); got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	data, err := os.ReadFile(filepath.Join(env.stateDir, "checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"version": "plain.drakit.dev/checkpoint/v1",
		"preparedClaims": map[string]any{uidA: map[string]any{
			"namespace": "test", "name": "a", "devices": []any{map[string]any{
				"request": "req0", "pool": testNode, "device": "dev-3",
				"cdiDeviceIDs": []any{"k8s.plain.drakit.dev/claim=" + uidA + "-dev-3"},
			}},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkpoint (-want +got):\n%s", diff)
	}
	if entries, err := os.ReadDir(env.stateDir); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("temporary file %s left in the state directory", e.Name())
			}
		}
	}
}

func TestWriteDeviceDirsReplacesWrongContent(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	devs := nodeDevices("node-a", 2, "")
	if err := os.MkdirAll(filepath.Join(state, "devices", "dev-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "devices", "dev-1", "serial"), []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeDeviceDirs(state, devs); err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		path := filepath.Join(state, "devices", d.Name, "serial")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != d.Serial+"\n" || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %q mode %v, want %q mode 0644", path, data, fi.Mode().Perm(), d.Serial+"\n")
		}
		if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v (%v), want 0755", filepath.Dir(path), di.Mode().Perm(), err)
		}
	}
	if devs[0].Serial == deviceSerial(testNode, 0) || !strings.HasPrefix(devs[0].Serial, "PLN-") {
		t.Errorf("serial %s of node-a: want PLN-… and different from %s's", devs[0].Serial, testNode)
	}
}
