package emulator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

func TestEmulatorFaultNVLink(t *testing.T) {
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Builtin("hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "node")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	out, err := runEmulator(t, "fault", "nvlink", "--root", root, "--device", "0000:18:00.0", "--link", "3", "--state", "down")
	if err != nil || !strings.Contains(out, "NVLink 3 down") {
		t.Fatalf("nvlink down: %q, %v", out, err)
	}
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range s.NVLinks {
		if l.Active == (l.GPU == 0 && l.Link == 3) {
			t.Errorf("GPU %d link %d active %v", l.GPU, l.Link, l.Active)
		}
	}
	for _, bad := range [][]string{
		{"--link", "18", "--state", "down"},
		{"--link", "1", "--state", "sideways"},
		{"--state", "down"},
	} {
		args := append([]string{"fault", "nvlink", "--root", root, "--device", "0"}, bad...)
		if out, err := runEmulator(t, args...); err == nil {
			t.Errorf("%v: succeeded: %s", bad, out)
		}
	}
}
