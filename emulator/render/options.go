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
}

// DefaultOptions returns Options with every default applied; Root has no
// default and must be set.
func DefaultOptions() Options {
	var o Options
	o.Default()
	return o
}

// Default cleans the paths in o.
func (o *Options) Default() {
	if o.Root != "" {
		o.Root = filepath.Clean(o.Root)
	}
	if o.ShimLibrary != "" {
		o.ShimLibrary = filepath.Clean(o.ShimLibrary)
	}
}

// Validate checks that Root is set and is not "/", and that ShimLibrary, when
// set, is a regular file.
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
	if len(errs) > 0 {
		return fmt.Errorf("invalid render options: %w", errors.Join(errs...))
	}
	return nil
}
