package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
)

// PathFlags are the flags, of whichever subcommand, that name a file or
// directory of this machine. The libraries want absolute, clean paths (a
// cluster's run dir is used from processes with other working
// directories), so a relative value given on the command line is made
// absolute against the working directory before the subcommand runs:
// `drakit env up --images-dir _output/images` works as a user types it.
// The deployments' host paths are paths on the cluster's nodes, which no
// working directory here can resolve: they stay as given (and must be
// absolute).
var PathFlags = map[string]bool{
	"run-dir": true, "components-dir": true, "images-dir": true, "kind-state-dir": true,
	"artifacts": true, "driver-config": true, "root": true, "emulator-root": true, "library-dir": true,
	"node-kubelet-root-dir": true, "node-emulator-root": true, "node-cgroup-root": true, "node-sysfs": true, "node-cdi-dir": true,
	"kubelet-registrar-dir": true, "rules": true, "pid-file": true, "nvml-header-dir": true,
	"shim": true, "cluster-config": true,
}

// AbsolutePathFlags rewrites every path flag that was set to a relative path
// as its absolute, clean form.
func AbsolutePathFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || !PathFlags[f.Name] || f.Value.Type() != "string" {
			return
		}
		v := f.Value.String()
		if v == "" || filepath.IsAbs(v) {
			return
		}
		abs, absErr := filepath.Abs(v)
		if absErr != nil {
			err = fmt.Errorf("resolve --%s %q: %w", f.Name, v, absErr)
			return
		}
		err = f.Value.Set(abs)
	})
	return err
}
