package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// TestEmulatorMIG drives "drakit emulator mig" on a rendered mixed-mig node:
// create on an H100 without instances, list, a refused disable, destroy.
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
	run := func(args ...string) (string, error) {
		cmd := &cobra.Command{Use: "drakit", SilenceUsage: true, SilenceErrors: true}
		cmd.AddCommand(newEmulatorMIGCommand())
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"mig", "--root", root}, args...))
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	gpuUUID := p.Spec.GPUs[2].UUID
	for _, step := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"create", "--gpu", "2", "--profile", "3g.40gb", "--placement", "0"},
			want: "GPU 2: created GI 2 (3g.40gb at 0:4), CI 0 (3g.40gb), " + profile.DeriveMIGUUID(gpuUUID, 2, 0)},
		{args: []string{"list"}, want: "2    NVIDIA H100 80GB HBM3  enabled   2   3g.40gb     0:4        0   3g.40gb     " + profile.DeriveMIGUUID(gpuUUID, 2, 0)},
		{args: []string{"create", "--gpu", "2", "--profile", "4g.40gb", "--placement", "0"}, wantErr: "Insufficient Resources"},
		{args: []string{"disable", "--gpu", "2"}, wantErr: "In use"},
		{args: []string{"destroy", "--gpu", "2", "--gi", "2"}, want: "GPU 2: destroyed GI 2"},
		{args: []string{"disable", "--gpu", "2"}, want: "GPU 2: MIG disabled"},
		{args: []string{"list"}, want: "2    NVIDIA H100 80GB HBM3  disabled  -"},
	} {
		out, err := run(step.args...)
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
