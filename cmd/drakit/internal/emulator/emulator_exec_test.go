package emulator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	emuexec "drakit.dev/drakit/emulator/exec"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

func TestEmulatorExecFlagsMapOntoConfig(t *testing.T) {
	cfg := emuexec.DefaultConfig()
	fs := pflag.NewFlagSet("exec", pflag.ContinueOnError)
	bindEmulatorExecFlags(fs, &cfg)
	clitest.CheckFlagsMapOneToOne(t, fs, &cfg)
}

func TestEmulatorExecValidation(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--", "true"}, "--root: required"},
		{[]string{"exec", "--root", "/no/such/root", "--", "true"}, "--root: stat /no/such/root"},
		{[]string{"exec", "--root", t.TempDir(), "--library-dir", "lib", "--", "true"}, "--library-dir: lib is not an absolute path"},
		{[]string{"exec", "--root", t.TempDir()}, "command: required"},
		{[]string{"exec", "--root", t.TempDir(), "--", "true"}, "not a rendered emulator root"},
	}
	for _, tt := range tests {
		if _, err := runEmulator(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("drakit emulator %s: %v, want an error containing %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// TestEmulatorExec runs a shell on a rendered node through the command:
// the shell sees the emulated sysfs without a prefix, its own flags are not
// drakit's, and drakit takes over its exit status.
func TestEmulatorExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: emulator exec creates a mount namespace and render creates device nodes (run go test as root)")
	}
	root := filepath.Join(t.TempDir(), "node")
	if out, err := runEmulator(t, "render", "--profile", "dgx-h100", "--root", root, "--shim", nvmltest.BuildShim(t)); err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	status := -1
	exitProcess = func(code int) { status = code }
	t.Cleanup(func() { exitProcess = os.Exit })
	out, err := runEmulator(t, "exec", "--root", root, "sh", "-c",
		"cat /sys/bus/pci/devices/0000:9a:00.0/numa_node; readlink -f /sys/bus/pci/devices/0000:9a:00.0; exit 5")
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	want := "1\n/sys/devices/pci0000:80/0000:80:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0\n"
	if out != want || status != 5 {
		t.Errorf("exec printed %q and exited %d; want %q and 5", out, status, want)
	}
	status = -1
	if out, err := runEmulator(t, "exec", "--root", root, "--", "true"); err != nil || status != -1 {
		t.Errorf("exec true: %v, exit %d, output %q; want success without exiting", err, status, out)
	}
}
