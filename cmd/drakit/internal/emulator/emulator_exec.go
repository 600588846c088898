package emulator

import (
	"errors"
	"os"
	osexec "os/exec"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	emuexec "drakit.dev/drakit/emulator/exec"
)

// exitProcess ends drakit with the command's status; tests replace it.
var exitProcess = os.Exit

// newEmulatorExecCommand is "drakit emulator exec": its flags map onto
// emuexec.Config, the arguments after -- are the Command's.
func newEmulatorExecCommand() *cobra.Command {
	cfg := emuexec.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "exec --root DIR [--shim PATH] [--library-dir DIR] -- COMMAND [ARG...]",
		Short: "Run a program on the emulated node: the root's sysfs, device nodes, procfs and NVML over the host's paths (needs root)",
		Long: `exec runs COMMAND in a private mount namespace in which the emulator root
is laid over the host's own paths: /sys/bus/pci, the host bridges under
/sys/devices, /sys/devices/system/{node,cpu}, /dev/nvidia*, /proc/devices,
/proc/driver/nvidia and libnvidia-ml.so.1 in the library directory. A driver
that reads them the way the kernel lays them out, and loads NVML from the
standard path, sees the emulated node and nothing of the host's GPUs.

Nothing changes on the host: every mount stays in the namespace, and a path
the host lacks (/dev/nvidia0, the library) appears in a tmpfs laid over its
directory that binds the directory's real entries back. drakit exits with the
command's status.`,
		Example: `  drakit emulator render --profile dgx-h100 --root /tmp/node --shim _output/lib/libnvidia-ml.so
  drakit emulator exec --root /tmp/node -- sh -c 'readlink -f /sys/bus/pci/devices/*; cat /sys/bus/pci/devices/*/numa_node'
  drakit emulator exec --root /tmp/node -- ./gpu-kubelet-plugin --node-name "$(hostname)"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			err := emuexec.Run(c.Context(), cfg, emuexec.Command{
				Args: args, Stdin: c.InOrStdin(), Stdout: c.OutOrStdout(), Stderr: c.ErrOrStderr(),
			})
			var exitErr *osexec.ExitError
			if errors.As(err, &exitErr) {
				exitProcess(exitStatus(exitErr))
				return nil
			}
			return err
		},
	}
	// The command's own flags follow it: parsing stops at its name.
	cmd.Flags().SetInterspersed(false)
	bindEmulatorExecFlags(cmd.Flags(), &cfg)
	return cmd
}

// bindEmulatorExecFlags binds one flag to each field of cfg.
func bindEmulatorExecFlags(fs *pflag.FlagSet, cfg *emuexec.Config) {
	fs.StringVar(&cfg.Root, "root", cfg.Root, "emulator root directory, rendered by 'drakit emulator render'")
	fs.StringVar(&cfg.Shim, "shim", cfg.Shim, "NVML library to mount instead of the one rendered into the root (see build-shim)")
	fs.StringVar(&cfg.LibraryDir, "library-dir", cfg.LibraryDir, "directory in which the program finds libnvidia-ml.so.1")
}

// exitStatus is the status a shell reports for the command: its exit code,
// or 128 plus the signal that killed it.
func exitStatus(e *osexec.ExitError) int {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := e.ExitCode(); code > 0 {
		return code
	}
	return 1
}
