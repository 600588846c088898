package emulator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// runMIG runs "drakit emulator mig --root root args…" and returns its output.
func runMIG(root string, args ...string) (string, error) {
	cmd := &cobra.Command{Use: "drakit", SilenceUsage: true, SilenceErrors: true}
	cmd.AddCommand(newEmulatorMIGCommand())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"mig", "--root", root}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestEmulatorMIG drives "drakit emulator mig" on a rendered mixed-mig node:
// create on an H100 without instances (with and without a placement), list,
// a refused disable, destroy, and create on H200s whose MIG mode is off.
func TestEmulatorMIG(t *testing.T) {
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering and MIG mutations need mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Load("mixed-mig")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(context.Background(), p, render.Options{Root: root, ShimLibrary: nvmltest.BuildShim(t)}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DRAKIT_EMULATOR_ROOT", "")
	gpuUUID := p.Spec.GPUs[2].UUID
	auto, _ := gpu.GIID(6, 1) // the highest free 1g placement once a 3g is at 0
	for _, step := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"create", "--gpu", "2", "--profile", "3g.40gb", "--placement", "0"},
			want: "GPU 2: created GI 2 (3g.40gb at 0:4), CI 0 (3g.40gb), " + gpu.DeriveMIGUUID(gpuUUID, 2, 0)},
		{args: []string{"list"}, want: "2    NVIDIA H100 80GB HBM3  enabled   2   3g.40gb     0:4        0   3g.40gb     " + gpu.DeriveMIGUUID(gpuUUID, 2, 0)},
		{args: []string{"create", "--gpu", "2", "--profile", "4g.40gb", "--placement", "0"}, wantErr: "Insufficient Resources"},
		{args: []string{"create", "--gpu", "2", "--profile", "1g.10gb"},
			want: fmt.Sprintf("GPU 2: created GI %d (1g.10gb at 6:1)", auto)},
		{args: []string{"disable", "--gpu", "2"}, wantErr: fmt.Sprintf("disable MIG mode of GPU 2: it still has 2 GPU instances (GI 2, %d); "+
			"destroy them first: drakit emulator mig destroy --root %s --gpu 2 --gi 2; drakit emulator mig destroy --root %[2]s --gpu 2 --gi %[1]d", auto, root)},
		{args: []string{"destroy", "--gpu", "2", "--gi", fmt.Sprint(auto)}, want: fmt.Sprintf("GPU 2: destroyed GI %d", auto)},
		{args: []string{"disable", "--gpu", "2"}, wantErr: fmt.Sprintf("it still has 1 GPU instance (GI 2); destroy it first: "+
			"drakit emulator mig destroy --root %s --gpu 2 --gi 2", root)},
		{args: []string{"destroy", "--gpu", "2", "--gi", "2"}, want: "GPU 2: destroyed GI 2"},
		{args: []string{"disable", "--gpu", "2"}, want: "GPU 2: MIG disabled"},
		{args: []string{"list"}, want: "2    NVIDIA H100 80GB HBM3  disabled  -"},
		{args: []string{"create", "--gpu", "5", "--profile", "1g.18gb"}, wantErr: "create GPU instance 1g.18gb on GPU 5: MIG mode is disabled; " +
			"enable it first: drakit emulator mig enable --root " + root + " --gpu 5"},
		{args: []string{"enable", "--gpu", "5"}, want: "GPU 5: MIG enabled"},
		{args: []string{"create", "--gpu", "5", "--profile", "1g.18gb", "--placement", "0"}, want: "GPU 5: created GI"},
		// GPU 4 has no mig section: MIG mode can be turned on, but it has no
		// MIG profiles.
		{args: []string{"enable", "--gpu", "4"}, want: "GPU 4: MIG enabled"},
		{args: []string{"create", "--gpu", "4", "--profile", "1g.18gb"}, wantErr: `GPU instance profile "1g.18gb": GPU 4 has no GPU instance profiles`},
	} {
		out, err := runMIG(root, step.args...)
		switch {
		case step.wantErr != "" && (err == nil || !strings.Contains(err.Error(), step.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", step.args, err, step.wantErr)
		case step.wantErr == "" && err != nil:
			t.Errorf("%v: %v\n%s", step.args, err, out)
		case !strings.Contains(out, step.want):
			t.Errorf("%v: output\n%s\nwant a line containing %q", step.args, out, step.want)
		}
	}
}

// TestEmulatorMIGRejectsBadInput: a negative placement is a flag error (no
// placement is no --placement), and a library that is not NVML is an error
// naming it and what it lacks, not a crash of the process.
func TestEmulatorMIGRejectsBadInput(t *testing.T) {
	root := t.TempDir()
	for _, placement := range []string{"-5", "-1"} {
		_, err := runMIG(root, "create", "--gpu", "0", "--profile", "1g.10gb", "--placement", placement)
		want := fmt.Sprintf(`invalid argument %q for "--placement" flag: a placement is a start memory slice, 0 or more; omit --placement to let NVML choose`, placement)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--placement %s: %v, want an error containing %q", placement, err, want)
		}
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	_, err := runMIG(root, "--library", libc, "list")
	if want := "library " + libc + " is not an NVML library: it does not export nvmlInit_v2"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--library %s: %v, want an error containing %q", libc, err, want)
	}
}
