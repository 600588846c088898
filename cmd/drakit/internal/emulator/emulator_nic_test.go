package emulator

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// renderNICRoot renders dgx-a100-mig (eight ConnectX-6) into a new root.
func renderNICRoot(t *testing.T) string {
	t.Helper()
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Builtin("dgx-a100-mig")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "node")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestEmulatorSRIOVAndLink(t *testing.T) {
	root := renderNICRoot(t)
	out, err := runEmulator(t, "sriov", "--root", root)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 || strings.Join(strings.Fields(lines[1]), " ") != "0000:0c:00.0 enp12s0np0 mlx5_core 16 0 up" {
		t.Errorf("sriov list:\n%s", out)
	}
	if out, err := runEmulator(t, "sriov", "--root", root, "--pf", "0000:0c:00.0", "--numvfs", "4"); err != nil || out != "PF 0000:0c:00.0: 4 VFs\n" {
		t.Errorf("sriov --numvfs 4: %q, %v", out, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices/0000:0c:00.0/virtfn3")); err != nil {
		t.Errorf("no virtfn3 after --numvfs 4: %v", err)
	}
	if out, err := runEmulator(t, "link", "--root", root, "--interface", "enp12s0f1", "--state", "down"); err != nil || out != "enp12s0f1: link down\n" {
		t.Errorf("link down: %q, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "sys/class/net/enp12s0f1/operstate")); err != nil || string(b) != "down\n" {
		t.Errorf("VF operstate after link down: %q, %v", b, err)
	}
	if out, err := runEmulator(t, "vf-remove", "--root", root, "--vf", "0000:0c:00.2"); err != nil || out != "0000:0c:00.2: removed\n" {
		t.Errorf("vf-remove: %q, %v", out, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices/0000:0c:00.2")); err == nil {
		t.Error("the removed VF is still on the bus")
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sriov"}, "--root: required"},
		{[]string{"vf-remove", "--root", root}, "--vf: required"},
		{[]string{"vf-remove", "--root", root, "--vf", "0000:0c:00.2"}, "--vf: PCI function 0000:0c:00.2: no such VF"},
		{[]string{"vf-remove", "--root", root, "--vf", "0000:0c:00.0"}, "--vf: PCI function 0000:0c:00.0: no such VF"},
		{[]string{"vf-remove", "--root", root, "--vf", "zz"}, "PCI address"},
		{[]string{"sriov", "--root", t.TempDir()}, "not a rendered emulator root"},
		{[]string{"sriov", "--root", root, "--numvfs", "2"}, "--pf: required with --numvfs"},
		{[]string{"sriov", "--root", root, "--pf", "0000:0c:00.0"}, "--numvfs: required with --pf"},
		{[]string{"sriov", "--root", root, "--pf", "0000:0c:00.0", "--numvfs", "-1"}, "--numvfs -1: must be 0 or more"},
		{[]string{"sriov", "--root", root, "--pf", "0c:00.0", "--numvfs", "1"}, "--pf: PCI address \"0c:00.0\""},
		{[]string{"sriov", "--root", root, "--pf", "0000:0c:00.0", "--numvfs", "2"}, "4 VFs already enabled, disable them (write 0) before enabling 2: device or resource busy"},
		{[]string{"sriov", "--root", root, "--pf", "0000:12:00.0", "--numvfs", "17"}, "sriov_totalvfs is 16: numerical result out of range"},
		{[]string{"sriov", "--root", root, "--pf", "0000:07:00.0", "--numvfs", "1"}, "0000:07:00.0: no SR-IOV capability"},
		{[]string{"link", "--root", root, "--state", "down"}, "--interface: required"},
		{[]string{"link", "--root", root, "--interface", "eth0", "--state", "down"}, "--interface: interface eth0: no such network interface"},
		{[]string{"link", "--root", root, "--interface", "enp12s0np0", "--state", "sideways"}, `--state "sideways": must be up or down`},
		{[]string{"watch"}, "--root: required"},
	}
	for _, tc := range tests {
		_, err := runEmulator(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestEmulatorWatch(t *testing.T) {
	root := renderNICRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := NewCommand()
	pr, pw := io.Pipe()
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"watch", "--root", root})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case line := <-lines:
			if !strings.Contains(line, want) {
				t.Errorf("watch printed %q, want %q", line, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("watch printed nothing within 20s, want %q", want)
		}
	}
	expect("watching 8 SR-IOV PFs under " + root)
	numvfs := filepath.Join(root, "sys/bus/pci/devices/0000:0c:00.0/sriov_numvfs")
	if err := os.WriteFile(numvfs, []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect("PF 0000:0c:00.0: 2 VFs")
	if err := os.WriteFile(numvfs, []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(`PF 0000:0c:00.0: refused "3": PF 0000:0c:00.0: 2 VFs already enabled`)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch ended with %v", err)
	}
	for range lines {
	}
}
