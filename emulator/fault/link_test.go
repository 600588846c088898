package fault_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/emulator/sriov"
)

func renderDGX(t *testing.T) string {
	t.Helper()
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Builtin("dgx-a100-mig")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	return root
}

func files(t *testing.T, root string, paths ...string) string {
	t.Helper()
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return strings.Join(out, " | ")
}

func TestSetLink(t *testing.T) {
	t.Parallel()
	root := renderDGX(t)
	const pf = "enp12s0np0"
	surfaces := []string{"sys/class/net/" + pf + "/operstate", "sys/class/net/" + pf + "/carrier", "sys/class/net/" + pf + "/speed",
		"sys/class/net/" + pf + "/duplex", "sys/class/infiniband/mlx5_0/ports/1/state", "sys/class/infiniband/mlx5_0/ports/1/phys_state",
		"sys/class/infiniband/mlx5_0/ports/1/rate"}
	up := "up | 1 | 200000 | full | 4: ACTIVE | 5: LinkUp | 200 Gb/sec (4X HDR)"
	if got := files(t, root, surfaces...); got != up {
		t.Fatalf("rendered link: %s", got)
	}
	if err := fault.SetLink(root, pf, false); err != nil {
		t.Fatal(err)
	}
	if got, want := files(t, root, surfaces...), "down | 0 | -1 | unknown | 1: DOWN | 3: Disabled | 10 Gb/sec (4X SDR)"; got != want {
		t.Errorf("link down: %s, want %s", got, want)
	}
	if on, err := fault.Link(root, pf); err != nil || on {
		t.Errorf("Link after down = %v, %v", on, err)
	}
	// A VF created now takes the PF's state; its own link moves alone.
	if err := sriov.SetNumVFs(root, "0000:0c:00.0", 1); err != nil {
		t.Fatal(err)
	}
	if on, err := fault.Link(root, "enp12s0f1"); err != nil || on {
		t.Errorf("VF created with the PF's link down: up %v, %v", on, err)
	}
	if err := fault.SetLink(root, pf, true); err != nil {
		t.Fatal(err)
	}
	if got := files(t, root, surfaces...); got != up {
		t.Errorf("link up again: %s, want %s", got, up)
	}
	if err := fault.SetLink(root, "enp12s0f1", true); err != nil {
		t.Fatal(err)
	}
	if got := files(t, root, "sys/class/net/enp12s0f1/operstate", "sys/class/net/enp12s0f1/speed"); got != "up | 200000" {
		t.Errorf("VF link up: %s", got)
	}
	if err := fault.SetLink(root, "eth9", false); !errors.Is(err, fault.ErrNoInterface) || !strings.Contains(err.Error(), "enp12s0np0") {
		t.Errorf("unknown interface: %v", err)
	}
	if err := fault.SetLink(root, "a/b", false); err == nil {
		t.Error("an invalid name is accepted")
	}
}
