package migctl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml/migctl"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  migctl.Config
		ok   bool
	}{
		{"no root", migctl.DefaultConfig(), false},
		{"root", migctl.Config{Root: "/r"}, true},
	} {
		tc.cfg.Default()
		if err := tc.cfg.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, migctl.ErrInvalid)) {
			t.Errorf("%s: Validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	c := migctl.Config{Root: "/r"}
	c.Default()
	if c.Library != "/r/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" {
		t.Errorf("default library %q", c.Library)
	}
}

func TestCreateRequestValidate(t *testing.T) {
	zero, negative := 0, -5
	for _, tc := range []struct {
		req  migctl.CreateRequest
		want string // "": valid
	}{
		{migctl.CreateRequest{GIProfile: "1g.10gb"}, ""},
		{migctl.CreateRequest{GIProfile: "1g.10gb", Placement: &zero}, ""},
		{migctl.CreateRequest{GIProfile: "1g.10gb", Placement: &negative}, "placement -5: a placement is a start memory slice, 0 or more; nil lets NVML choose"},
		{migctl.CreateRequest{}, "GPU instance profile: required"},
	} {
		err := tc.req.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && (!errors.Is(err, migctl.ErrInvalid) || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalid containing %q", tc.req, err, tc.want)
		}
	}
}

// TestOpenRejectsLibrariesThatAreNotNVML: Open checks the library before
// NVML binds to it, so a library without NVML's functions is an error naming
// it and what it lacks, not a symbol lookup error that kills the process.
func TestOpenRejectsLibrariesThatAreNotNVML(t *testing.T) {
	text := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	if err := os.WriteFile(text, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ lib, want string }{
		{text, "library " + text + " is not an ELF shared library"},
		{"/lib/x86_64-linux-gnu/libc.so.6", "library /lib/x86_64-linux-gnu/libc.so.6 is not an NVML library: it does not export nvmlInit_v2 and "},
	}
	for _, tc := range tests {
		if _, err := os.Stat(tc.lib); err != nil {
			t.Logf("skip %s: %v", tc.lib, err)
			continue
		}
		_, err := migctl.Open(migctl.Config{Root: t.TempDir(), Library: tc.lib})
		if !errors.Is(err, migctl.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open with %s: %v, want ErrInvalid containing %q", tc.lib, err, tc.want)
		}
	}
}

// TestLifecycle drives one emulated node: create, list, overlap, destroy,
// MIG mode off and on. A process binds one NVML library, so this is the
// package's only test that opens a session.
func TestLifecycle(t *testing.T) {
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("MIG mutations need mknod (root or CAP_MKNOD): %v", err)
	}
	s := nvmltest.SampleState()
	nvmltest.AddMIG(s, 0, "H100-80GB-HBM3")
	root := nvmltest.NewMIGRoot(t, s)
	t.Setenv("DRAKIT_EMULATOR_ROOT", "")
	sess, err := migctl.Open(migctl.Config{Root: root, Library: nvmltest.BuildShim(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sess.Close(); err != nil {
			t.Error(err)
		}
	})
	start := 0
	gi, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "3g.40gb", Placement: &start})
	if err != nil {
		t.Fatal(err)
	}
	want := migctl.GPUInstance{ID: 2, Profile: "3g.40gb", Start: 0, Size: 4, ComputeInstances: []migctl.ComputeInstance{
		{ID: 0, Profile: "3g.40gb", Start: 0, Size: 3, UUID: gpu.DeriveMIGUUID(s.GPUs[0].UUID, 2, 0)}}}
	if diff := cmp.Diff(want, gi); diff != "" {
		t.Errorf("Create (-want +got):\n%s", diff)
	}
	small, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "1g.10gb", CIProfile: "1g.10gb"})
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := sess.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != len(s.GPUs) || !gpus[0].MIGMode || gpus[1].MIGMode || gpus[2].MIGCapable {
		t.Errorf("List: %+v", gpus)
	}
	if diff := cmp.Diff([]migctl.GPUInstance{gi, small}, gpus[0].Instances); diff != "" {
		t.Errorf("List GPU 0 instances (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"overlap", func() error {
			_, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "4g.40gb", Placement: &start})
			return err
		}(), nvml.ERROR_INSUFFICIENT_RESOURCES},
		{"unknown GI profile", func() error { _, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "9g"}); return err }(), migctl.ErrInvalid},
		{"unknown CI profile", func() error {
			_, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "1g.10gb", CIProfile: "5c"})
			return err
		}(), migctl.ErrInvalid},
		{"GPU out of range", sess.SetMode(7, true), migctl.ErrInvalid},
		{"disable with instances", sess.SetMode(0, false), nvml.ERROR_IN_USE},
		{"GPU without MIG", sess.SetMode(2, true), nvml.ERROR_NOT_SUPPORTED},
		{"create on a GPU without MIG", func() error { _, err := sess.Create(migctl.CreateRequest{GPU: 2, GIProfile: "1g.10gb"}); return err }(), migctl.ErrInvalid},
		{"destroy on a GPU without MIG", sess.Destroy(2, 1), migctl.ErrInvalid},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	var inUse *migctl.InstancesError
	if err := sess.SetMode(0, false); !errors.As(err, &inUse) || !cmp.Equal(inUse.GPUInstances, []int{gi.ID, small.ID}) ||
		!strings.Contains(err.Error(), "disable MIG mode of GPU 0: it still has 2 GPU instances (GI 2, 9); destroy them first") {
		t.Errorf("disable with instances: %v, want an InstancesError naming GIs %d and %d", err, gi.ID, small.ID)
	}
	if _, err := sess.Create(migctl.CreateRequest{GPU: 2, GIProfile: "1g.10gb"}); err == nil || !strings.Contains(err.Error(), "GPU 2 is not MIG capable") {
		t.Errorf("create on the L4: %v, want it to say the GPU is not MIG capable", err)
	}
	// The failed CI creation destroyed its GI again: still two GIs.
	if gpus, _ := sess.List(); len(gpus[0].Instances) != 2 {
		t.Errorf("after the failed creates: %+v", gpus[0].Instances)
	}
	for _, g := range []int{gi.ID, small.ID} {
		if err := sess.Destroy(0, g); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.SetMode(0, false); err != nil {
		t.Fatal(err)
	}
	if gpus, _ := sess.List(); gpus[0].MIGMode || len(gpus[0].Instances) != 0 {
		t.Errorf("after destroy and disable: %+v", gpus[0])
	}
	if _, err := sess.Create(migctl.CreateRequest{GPU: 0, GIProfile: "1g.10gb"}); !errors.Is(err, migctl.ErrMIGDisabled) ||
		err.Error() != "create GPU instance 1g.10gb on GPU 0: MIG mode is disabled" {
		t.Errorf("create with MIG off: %v, want ErrMIGDisabled", err)
	}
	if err := sess.Destroy(0, gi.ID); !errors.Is(err, migctl.ErrMIGDisabled) {
		t.Errorf("destroy with MIG off: %v, want ErrMIGDisabled", err)
	}
	if err := sess.SetMode(0, true); err != nil {
		t.Fatal(err)
	}
}
