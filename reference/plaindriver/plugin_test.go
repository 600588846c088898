package plaindriver

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
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
	got := prepareOne(t, p, claimOf("two", uidA, "dev-1", "dev-3"))
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
			got := prepareOne(t, p, claimOf("two", uidA, tc.devices...))
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
			if got := prepareOne(t, p, claimOf("c", uidA, names...)); got.Err != nil {
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

func TestPrepareIsIdempotent(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	claim := claimOf("two", uidA, "dev-0", "dev-2")
	first := prepareOne(t, p, claim)
	spec, err := os.ReadFile(env.specPath(uidA))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(filepath.Join(env.stateDir, "checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	second := prepareOne(t, p, claim)
	if first.Err != nil || second.Err != nil {
		t.Fatalf("prepare: %v, again: %v", first.Err, second.Err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second prepare (-first +second):\n%s", diff)
	}
	for path, before := range map[string][]byte{env.specPath(uidA): spec, filepath.Join(env.stateDir, "checkpoint.json"): cp} {
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(before) {
			t.Errorf("%s changed on the second prepare:\n%s\nthen\n%s", path, before, after)
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	if got := prepareOne(t, p, claimOf("held", uidB, "dev-2")); got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	notAllocated := claimOf("n", uidA)
	notAllocated.Status.Allocation = nil
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{"not-allocated", notAllocated, "prepare claim test/n (" + uidA + "): not allocated"},
		{"other-pool", allocatedClaim("o", uidA, allocResult(testDriver, "node-b", "r", "dev-0")),
			"prepare claim test/o (" + uidA + "): device dev-0 is in pool node-b, this node's pool is 127.0.0.1"},
		{"unknown-device", claimOf("u", uidA, "dev-4"), "prepare claim test/u (" + uidA + "): device dev-4 is not on this node"},
		{"held-by-other-claim", claimOf("h", uidA, "dev-1", "dev-2"),
			"prepare claim test/h (" + uidA + "): device dev-2 is already prepared for claim test/held (" + uidB + ")"},
	} {
		got := prepareOne(t, p, tc.claim)
		if got.Err == nil || got.Err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, got.Err, tc.want)
		}
		if _, err := os.Stat(env.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a spec was written (stat: %v)", tc.name, err)
		}
		if _, ok := p.prepared[uidA]; ok {
			t.Errorf("%s: the failed claim was checkpointed", tc.name)
		}
	}
}

// TestPrepareSharesAndIgnores: admin access shares a held device, results of
// other drivers are ignored, and a claim without devices of this driver
// gets no spec.
func TestPrepareSharesAndIgnores(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	if got := prepareOne(t, p, claimOf("held", uidB, "dev-2")); got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	admin := allocResult(testDriver, testNode, "monitor", "dev-2")
	admin.AdminAccess = ptr.To(true)
	got := prepareOne(t, p, allocatedClaim("admin", uidA, admin, allocResult("gpu.drakit.dev", testNode, "gpu", "gpu-0")))
	if got.Err != nil || len(got.Devices) != 1 || got.Devices[0].DeviceName != "dev-2" {
		t.Fatalf("admin prepare: %+v, want dev-2 only", got)
	}
	other := prepareOne(t, p, allocatedClaim("other", "cccccccc-0000-0000-0000-000000000003", allocResult("gpu.drakit.dev", testNode, "gpu", "gpu-0")))
	if other.Err != nil || len(other.Devices) != 0 {
		t.Fatalf("prepare of another driver's claim: %+v, want no devices", other)
	}
	if _, err := os.Stat(env.specPath("cccccccc-0000-0000-0000-000000000003")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim without devices of this driver got a spec (stat: %v)", err)
	}
}

// TestUnprepare: unprepare removes the spec and the checkpoint entry, also
// after a restart (a new plugin on the same state), and succeeds for claims
// it does not know, removing a spec a crash left; with leave-cdi-spec the
// spec stays while the claim is forgotten.
func TestUnprepare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		defect    Defect
		wantSpecs bool
	}{{"", false}, {DefectLeaveCDISpec, true}} {
		t.Run("defect="+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, tc.defect)
			p := env.plugin(t)
			if got := prepareOne(t, p, claimOf("a", uidA, "dev-0", "dev-1")); got.Err != nil {
				t.Fatalf("prepare: %v", got.Err)
			}
			// A spec written just before a crash: no checkpoint entry.
			stray := env.specPath(uidB)
			if err := os.WriteFile(stray, []byte(`{"cdiVersion":"0.3.0","kind":"k8s.plain.drakit.dev/claim","devices":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}

			restarted := env.plugin(t)
			if _, ok := restarted.prepared[uidA]; !ok {
				t.Fatalf("restarted plugin does not know the prepared claim: %v", restarted.prepared)
			}
			for uid, err := range unprepare(t, restarted, uidA, uidB) {
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
			after := env.plugin(t)
			if len(after.prepared) != 0 || len(restarted.prepared) != 0 {
				t.Errorf("claims still checkpointed after unprepare: %v", after.prepared)
			}
			// Unpreparing again succeeds.
			if err := unprepare(t, after, uidA)[uidA]; err != nil {
				t.Errorf("second unprepare: %v", err)
			}
			// The device is free for the next claim.
			if got := prepareOne(t, after, claimOf("next", "dddddddd-0000-0000-0000-000000000004", "dev-0")); got.Err != nil {
				t.Errorf("prepare after unprepare: %v", got.Err)
			}
		})
	}
}

func TestCheckpointFormat(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	if got := prepareOne(t, p, claimOf("a", uidA, "dev-3")); got.Err != nil {
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

func TestCorruptCheckpointStopsTheDriver(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"truncated":     `{"version":"plain.drakit.dev/checkpoint/v1","preparedClaims":{`,
		"other-version": `{"version":"plain.drakit.dev/checkpoint/v0","preparedClaims":{}}`,
		"unknown-field": `{"version":"plain.drakit.dev/checkpoint/v1","preparedClaims":{},"extra":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, "")
			if err := os.MkdirAll(env.stateDir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(env.stateDir, "checkpoint.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := env.tryPlugin(t)
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want ErrCorruptCheckpoint naming %s", err, path)
			}
		})
	}
}

func TestWriteDeviceDirsReplacesWrongContent(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	devs := nodeDevices("node-a", 2)
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

// TestClaimUIDMustBeAUID: a UID that could lead out of the CDI directory is
// refused by prepare and unprepare, and no file outside is touched.
func TestClaimUIDMustBeAUID(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "")
	p := env.plugin(t)
	victim := filepath.Join(filepath.Dir(env.cdiDir), "victim.json")
	if err := os.WriteFile(victim, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	const uid = "x/../../victim"
	got := prepareOne(t, p, claimOf("bad", uid, "dev-0"))
	if got.Err == nil || !strings.Contains(got.Err.Error(), `claim UID "x/../../victim" has characters other than letters, digits and '-'`) {
		t.Errorf("prepare: %v, want the UID refused", got.Err)
	}
	if err := unprepare(t, p, uid)[uid]; err == nil {
		t.Error("unprepare of a UID with a path succeeded")
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a file outside the CDI directory is gone: %v", err)
	}
	if got := prepareOne(t, p, claimOf("none", "", "dev-0")); got.Err == nil || !strings.Contains(got.Err.Error(), "the claim has no UID") {
		t.Errorf("prepare without UID: %v", got.Err)
	}
}
