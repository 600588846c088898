package plaindriver

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// preparedEdits prepares a claim for dev-1 with the style and defect and
// returns the CDI device IDs prepare returned and the edits of the spec's
// one CDI device.
func preparedEdits(t *testing.T, s Style, d Defect, claim *resourceapi.ResourceClaim) ([]string, cdispec.ContainerEdits) {
	t.Helper()
	env := newTestEnv(t, d)
	env.style = s
	p := env.wrapped(t, 0)
	got := harnesstest.PrepareOne(t, p, claim)
	if got.Err != nil || len(got.Devices) != 1 {
		t.Fatalf("prepare: %v, %d devices", got.Err, len(got.Devices))
	}
	spec := readSpec(t, env.specPath(uidA))
	if len(spec.Devices) != 1 || spec.Devices[0].Name != uidA+"-dev-1" {
		t.Fatalf("spec devices %+v, want one for dev-1", spec.Devices)
	}
	return got.Devices[0].CDIDeviceIDs, spec.Devices[0].ContainerEdits
}

func mountOf(e cdispec.ContainerEdits, containerPath string) *cdispec.Mount {
	for _, m := range e.Mounts {
		if m.ContainerPath == containerPath {
			return m
		}
	}
	return nil
}

func nodePaths(e cdispec.ContainerEdits) []string {
	var out []string
	for _, n := range e.DeviceNodes {
		out = append(out, n.Path)
	}
	return out
}

// TestStylesAndContainerDefects: what a container of a claim for dev-1
// gets in each style, and what each container-side defect changes there.
func TestStylesAndContainerDefects(t *testing.T) {
	t.Parallel()
	serial1 := "PLN-12ca17b4-1"
	id := "k8s.plain.drakit.dev/claim=" + uidA + "-dev-1"
	for _, tc := range []struct {
		style  Style
		defect Defect
		check  func(t *testing.T, ids []string, e cdispec.ContainerEdits)
	}{
		{StyleMounts, "", func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			m := mountOf(e, "/var/run/plain/dev-1")
			if !slices.Equal(e.Env, []string{"PLAIN_DEVICE_1=dev-1", "PLAIN_DEVICE_1_SERIAL=" + serial1}) || m == nil || !slices.Contains(m.Options, "ro") || len(e.DeviceNodes) > 0 {
				t.Errorf("edits %+v", e)
			}
		}},
		{StyleEnvOnly, "", func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if !slices.Equal(e.Env, []string{"PLAIN_DEVICE_1=dev-1", "PLAIN_DEVICE_1_SERIAL=" + serial1}) || len(e.Mounts)+len(e.DeviceNodes) > 0 {
				t.Errorf("edits %+v, want the variables only", e)
			}
		}},
		{StyleDeviceNodes, "", func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if len(e.DeviceNodes) != 1 || len(e.Mounts) > 0 {
				t.Fatalf("edits %+v, want one device node", e)
			}
			n := e.DeviceNodes[0]
			if n.Path != "/dev/plain/dev-1" || n.HostPath != "/dev/null" || n.Type != "c" || n.Major != 1 || n.Minor != 3 {
				t.Errorf("device node %+v, want /dev/plain/dev-1 from /dev/null, c 1:3", n)
			}
		}},
		{StyleEnvOnly, DefectWrongDevice, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if !slices.Equal(e.Env, []string{"PLAIN_DEVICE_0=dev-0", "PLAIN_DEVICE_0_SERIAL=PLN-12ca17b4-0"}) {
				t.Errorf("env %v, want dev-0's (allocated: dev-1)", e.Env)
			}
		}},
		{StyleMounts, DefectMissingEnv, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if slices.ContainsFunc(e.Env, func(v string) bool { return strings.HasPrefix(v, "PLAIN_DEVICE_1=") }) {
				t.Errorf("env %v has PLAIN_DEVICE_1", e.Env)
			}
		}},
		{StyleMounts, DefectEnvWrongValue, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if !slices.Contains(e.Env, "PLAIN_DEVICE_1=dev1") {
				t.Errorf("env %v, want PLAIN_DEVICE_1=dev1", e.Env)
			}
		}},
		{StyleMounts, DefectMountMissing, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if len(e.Mounts) > 0 {
				t.Errorf("mounts %+v, want none", e.Mounts)
			}
		}},
		{StyleMounts, DefectMountWritable, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if m := mountOf(e, "/var/run/plain/dev-1"); m == nil || slices.Contains(m.Options, "ro") {
				t.Errorf("mounts %+v, want /var/run/plain/dev-1 without ro", e.Mounts)
			}
		}},
		{StyleDeviceNodes, DefectDeviceNodeMissing, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if len(e.DeviceNodes) > 0 {
				t.Errorf("device nodes %v, want none", nodePaths(e))
			}
		}},
		{StyleDeviceNodes, DefectExtraDeviceNode, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if got := nodePaths(e); !slices.Equal(got, []string{"/dev/plain/dev-1", "/dev/plain/dev-0"}) {
				t.Errorf("device nodes %v, want dev-1's and dev-0's", got)
			}
		}},
		{StyleMounts, DefectNoCDIEdits, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if len(ids) > 0 {
				t.Errorf("prepare returned CDI devices %v, want none", ids)
			}
		}},
		{StyleMounts, DefectUnresolvableCDIDevice, func(t *testing.T, ids []string, e cdispec.ContainerEdits) {
			if !slices.Equal(ids, []string{id + "-unknown"}) {
				t.Errorf("prepare returned CDI devices %v, want %s-unknown (not in the spec)", ids, id)
			}
		}},
	} {
		t.Run(string(tc.style)+"/"+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			ids, e := preparedEdits(t, tc.style, tc.defect, claimOf("c", uidA, "dev-1"))
			if tc.defect != DefectNoCDIEdits && tc.defect != DefectUnresolvableCDIDevice && !slices.Equal(ids, []string{id}) {
				t.Errorf("prepare returned CDI devices %v, want %s", ids, id)
			}
			tc.check(t, ids, e)
		})
	}
}

// configuredClaim is a claim for dev-1 with an opaque config of the
// driver with these parameters.
func configuredClaim(parameters string) *resourceapi.ResourceClaim {
	c := claimOf("c", uidA, "dev-1")
	c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{
		Source: resourceapi.AllocationConfigSourceClaim,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: testDriver, Parameters: runtime.RawExtension{Raw: []byte(parameters)},
		}},
	}}
	return c
}

func TestStrictConfig(t *testing.T) {
	t.Parallel()
	good := `{"apiVersion": "plain.drakit.dev/v1", "kind": "DeviceConfig", "label": "sample"}`
	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		_, e := preparedEdits(t, StyleStrictConfig, "", configuredClaim(good))
		if !slices.Contains(e.Env, "PLAIN_DEVICE_1_LABEL=sample") || len(e.Mounts) > 0 {
			t.Errorf("edits %+v, want PLAIN_DEVICE_1_LABEL=sample and no mount", e)
		}
	})
	t.Run("config-ignored", func(t *testing.T) {
		t.Parallel()
		_, e := preparedEdits(t, StyleStrictConfig, DefectConfigIgnored, configuredClaim(good))
		if slices.ContainsFunc(e.Env, func(v string) bool { return strings.Contains(v, "_LABEL=") }) {
			t.Errorf("env %v has the label", e.Env)
		}
	})
	t.Run("other-styles-ignore-configs", func(t *testing.T) {
		t.Parallel()
		_, e := preparedEdits(t, StyleEnvOnly, "", configuredClaim(`{"drakitConfigFor": "x"}`))
		if len(e.Env) != 2 {
			t.Errorf("env %v, want the two variables", e.Env)
		}
	})
	for name, params := range map[string]string{
		"unknown-field": `{"apiVersion": "plain.drakit.dev/v1", "kind": "DeviceConfig", "label": "x", "extra": 1}`,
		"other-kind":    `{"apiVersion": "plain.drakit.dev/v1", "kind": "Other", "label": "x"}`,
		"no-label":      `{"apiVersion": "plain.drakit.dev/v1", "kind": "DeviceConfig"}`,
		"kit-invented":  `{"drakitConfigFor": "x"}`,
		"trailing":      good + `{}`,
	} {
		t.Run("rejects-"+name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, "")
			env.style = StyleStrictConfig
			got := harnesstest.PrepareOne(t, env.wrapped(t, 0), configuredClaim(params))
			if got.Err == nil || !strings.Contains(got.Err.Error(), "opaque config") {
				t.Errorf("prepare: %v, want an opaque config error", got.Err)
			}
			if _, err := os.Stat(env.specPath(uidA)); err == nil {
				t.Error("a spec was written for the refused claim")
			}
		})
	}
}

// TestPrepareDefects: the defects that refuse or change prepare.
func TestPrepareDefects(t *testing.T) {
	t.Parallel()
	errOf := func(t *testing.T, s Style, d Defect, delay time.Duration, ctx context.Context, claim *resourceapi.ResourceClaim) error {
		env := newTestEnv(t, d)
		env.style = s
		res, err := env.wrapped(t, delay).PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			t.Fatal(err)
		}
		return res[claim.UID].Err
	}
	t.Run("prepare-fails", func(t *testing.T) {
		t.Parallel()
		if err := errOf(t, "", DefectPrepareFails, 0, t.Context(), claimOf("c", uidA, "dev-1")); err == nil || !strings.Contains(err.Error(), "defect prepare-fails") {
			t.Errorf("prepare: %v", err)
		}
	})
	t.Run("prepare-slow", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		if err := errOf(t, "", DefectPrepareSlow, time.Minute, ctx, claimOf("c", uidA, "dev-1")); err == nil {
			t.Error("prepare within the caller's deadline succeeded")
		}
		start := time.Now()
		if err := errOf(t, "", DefectPrepareSlow, 50*time.Millisecond, t.Context(), claimOf("c", uidA, "dev-1")); err != nil || time.Since(start) < 50*time.Millisecond {
			t.Errorf("prepare without a deadline: %v after %v", err, time.Since(start))
		}
		if PrepareDelay <= 45*time.Second {
			t.Errorf("PrepareDelay %v is within the kubelet's 45 s", PrepareDelay)
		}
	})
	t.Run("shares-refused", func(t *testing.T) {
		t.Parallel()
		c := claimOf("c", uidA, "shared-0")
		c.Status.Allocation.Devices.Results[0].ShareID = ptr.To(types.UID("0e3ad1f0-0000-4000-8000-000000000001"))
		if err := errOf(t, StyleConsumableCapacity, "", 0, t.Context(), c); err != nil {
			t.Errorf("correct driver: prepare a share: %v", err)
		}
		if err := errOf(t, StyleConsumableCapacity, DefectSharesRefused, 0, t.Context(), c); err == nil || !strings.Contains(err.Error(), "defect shares-refused") {
			t.Errorf("prepare: %v", err)
		}
	})
	t.Run("admin-access-refused", func(t *testing.T) {
		t.Parallel()
		c := claimOf("c", uidA, "dev-1")
		c.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
		if err := errOf(t, "", "", 0, t.Context(), c); err != nil {
			t.Errorf("correct driver: prepare with admin access: %v", err)
		}
		if err := errOf(t, "", DefectAdminAccessRefused, 0, t.Context(), c); err == nil || !strings.Contains(err.Error(), "admin access") {
			t.Errorf("prepare: %v", err)
		}
	})
	t.Run("not-idempotent", func(t *testing.T) {
		t.Parallel()
		for _, d := range []Defect{"", DefectNotIdempotent} {
			env := newTestEnv(t, d)
			p := env.wrapped(t, 0)
			first := harnesstest.PrepareOne(t, p, claimOf("c", uidA, "dev-1"))
			again := harnesstest.PrepareOne(t, p, claimOf("c", uidA, "dev-1"))
			if first.Err != nil {
				t.Fatalf("first prepare: %v", first.Err)
			}
			if failed := again.Err != nil; failed != (d == DefectNotIdempotent) {
				t.Errorf("defect %q: repeated prepare: %v", d, again.Err)
			}
		}
	})
}

// TestUnprepareDefects: what is left after unprepare with each defect.
func TestUnprepareDefects(t *testing.T) {
	t.Parallel()
	t.Run("unprepare-fails", func(t *testing.T) {
		t.Parallel()
		env := newTestEnv(t, DefectUnprepareFails)
		p := env.wrapped(t, 0)
		harnesstest.PrepareOne(t, p, claimOf("c", uidA, "dev-1"))
		if err := harnesstest.Unprepare(t, p, uidA)[types.UID(uidA)]; err == nil {
			t.Error("unprepare succeeded")
		}
		if _, err := os.Stat(env.specPath(uidA)); err != nil {
			t.Errorf("spec: %v, want it still there", err)
		}
		if got := harnesstest.PrepareOne(t, p, claimOf("d", uidB, "dev-1")); got.Err == nil {
			t.Error("another claim got the device the failed unprepare kept")
		}
	})
	t.Run("unprepare-keeps-device", func(t *testing.T) {
		t.Parallel()
		env := newTestEnv(t, DefectUnprepareKeepsDevice)
		p := env.wrapped(t, 0)
		harnesstest.PrepareOne(t, p, claimOf("c", uidA, "dev-1"))
		if err := harnesstest.Unprepare(t, p, uidA)[types.UID(uidA)]; err != nil {
			t.Fatalf("unprepare: %v", err)
		}
		if _, err := os.Stat(env.specPath(uidA)); err == nil {
			t.Error("spec still there")
		}
		if got := harnesstest.PrepareOne(t, p, claimOf("d", uidB, "dev-1")); got.Err == nil || !strings.Contains(got.Err.Error(), "still held") {
			t.Errorf("next claim for the device: %v, want an error", got.Err)
		}
		if got := harnesstest.PrepareOne(t, p, claimOf("e", uidB, "dev-2")); got.Err != nil {
			t.Errorf("claim for another device: %v", got.Err)
		}
	})
	for _, d := range []Defect{"", DefectStateLost} {
		t.Run("restart/"+string(d), func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t, d)
			harnesstest.PrepareOne(t, env.wrapped(t, 0), claimOf("c", uidA, "dev-1"))
			if d == DefectStateLost {
				if _, err := dropCheckpoint(env.stateDir); err != nil {
					t.Fatal(err)
				}
			}
			restarted := env.wrapped(t, 0)
			if err := harnesstest.Unprepare(t, restarted, uidA)[types.UID(uidA)]; err != nil {
				t.Fatalf("unprepare after the restart: %v", err)
			}
			_, err := os.Stat(env.specPath(uidA))
			if left := err == nil; left != (d == DefectStateLost) {
				t.Errorf("defect %q: spec left after unprepare: %v", d, left)
			}
		})
	}
}
