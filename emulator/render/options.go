package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Options says where to render and what to install.
type Options struct {
	// Root is the emulator root R; created when missing. It must be a
	// directory (not a symbolic link) that is empty, absent, or a root this
	// package rendered before (MarkerFile), without mount points below it.
	Root string
	// ShimLibrary is the built NVML shim (drakit emulator build-shim). It is
	// copied to R/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driverVersion>
	// with a libnvidia-ml.so.1 link. Empty: no library is installed and
	// everything else is still rendered.
	ShimLibrary string
	// NvidiaSMI is the emulator's built nvidia-smi (drakit emulator
	// build-shim writes it beside the shim). It is copied to
	// R/usr/bin/nvidia-smi (NvidiaSMIPath), where NVIDIA's GPU kubelet
	// plugin looks for it in its driver root. Default: "nvidia-smi" in
	// ShimLibrary's directory when ShimLibrary is set, so the NVML library
	// and nvidia-smi are installed together, as a driver installs them;
	// empty otherwise (none is installed).
	NvidiaSMI string
}

// NvidiaSMIName is the file name Options.NvidiaSMI defaults to beside
// Options.ShimLibrary, the name drakit emulator build-shim writes.
const NvidiaSMIName = "nvidia-smi"

// DefaultOptions returns Options with every default applied; Root has no
// default and must be set.
func DefaultOptions() Options {
	var o Options
	o.Default()
	return o
}

// Default cleans the paths in o and sets NvidiaSMI beside ShimLibrary when
// it is empty.
func (o *Options) Default() {
	if o.ShimLibrary != "" && o.NvidiaSMI == "" {
		o.NvidiaSMI = filepath.Join(filepath.Dir(o.ShimLibrary), NvidiaSMIName)
	}
	for _, p := range []*string{&o.Root, &o.ShimLibrary, &o.NvidiaSMI} {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
}

// Validate checks that Root is set and is not "/", and that ShimLibrary and
// NvidiaSMI, when set, are regular files.
func (o *Options) Validate() error {
	var errs []error
	switch {
	case o.Root == "":
		errs = append(errs, errors.New("root: required"))
	case filepath.Clean(o.Root) == "/":
		errs = append(errs, errors.New("root: must not be /"))
	}
	if o.ShimLibrary != "" {
		fi, err := os.Stat(o.ShimLibrary)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("shimLibrary: %w", err))
		case !fi.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("shimLibrary: %s is not a regular file", o.ShimLibrary))
		}
	}
	if o.NvidiaSMI != "" {
		const hint = " (drakit emulator build-shim writes nvidia-smi beside the shim; build it again)"
		fi, err := os.Stat(o.NvidiaSMI)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("nvidiaSMI: %w%s", err, hint))
		case !fi.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("nvidiaSMI: %s is not a regular file%s", o.NvidiaSMI, hint))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid render options: %w", errors.Join(errs...))
	}
	return nil
}
