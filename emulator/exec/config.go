package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DefaultLibraryDir is where NVIDIA's driver installs libnvidia-ml.so.1 on
// Debian and Ubuntu x86-64 hosts, the directory drivers search first for it
// after /usr/lib64 (NVIDIA's k8s-dra-driver-gpu) and the one the dynamic
// loader searches for dlopen("libnvidia-ml.so.1").
const DefaultLibraryDir = "/usr/lib/x86_64-linux-gnu"

// RootEnv is the environment variable through which the NVML shim finds the
// emulator root's state file (emulator/nvml); Run sets it to Config.Root in
// the command's environment.
const RootEnv = "DRAKIT_EMULATOR_ROOT"

// Config says which emulator root to lay over the kernel's paths. Each field
// is a flag of "drakit emulator exec".
type Config struct {
	// Root is the emulator root R, rendered by "drakit emulator render"
	// (flag --root). Required.
	Root string
	// Shim is the NVML library to mount as libnvidia-ml.so.<driverVersion>
	// and libnvidia-ml.so.1 instead of the one rendered into R (flag
	// --shim). Empty: R's R/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.*;
	// then R must have been rendered with a shim.
	Shim string
	// LibraryDir is the directory the NVML library appears in, where
	// drivers dlopen it (flag --library-dir). Default DefaultLibraryDir.
	LibraryDir string
}

// DefaultConfig returns a Config with every default applied; Root has no
// default and must be set.
func DefaultConfig() Config {
	var c Config
	c.Default()
	return c
}

// Default fills in the defaults and cleans the paths.
func (c *Config) Default() {
	if c.LibraryDir == "" {
		c.LibraryDir = DefaultLibraryDir
	}
	for _, p := range []*string{&c.Root, &c.Shim, &c.LibraryDir} {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
}

// ErrInvalidConfig classifies Validate's errors.
var ErrInvalidConfig = errors.New("invalid emulator exec configuration")

// Validate checks every field and reports all problems, each naming its
// flag.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case c.Root == "":
		errs = append(errs, errors.New("--root: required: the emulator root to lay over the host's paths"))
	case c.Root == "/":
		errs = append(errs, errors.New("--root: must not be /"))
	default:
		if fi, err := os.Stat(c.Root); err != nil {
			errs = append(errs, fmt.Errorf("--root: %w", err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("--root: %s is not a directory", c.Root))
		}
	}
	if c.Shim != "" {
		if fi, err := os.Stat(c.Shim); err != nil {
			errs = append(errs, fmt.Errorf("--shim: %w", err))
		} else if !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("--shim: %s is not a regular file", c.Shim))
		}
	}
	switch {
	case c.LibraryDir == "":
		errs = append(errs, errors.New("--library-dir: required"))
	case !filepath.IsAbs(c.LibraryDir):
		errs = append(errs, fmt.Errorf("--library-dir: %s is not an absolute path", c.LibraryDir))
	case c.LibraryDir == "/":
		errs = append(errs, errors.New("--library-dir: must not be /"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Command is what Run runs on the emulated node.
type Command struct {
	// Args are the program and its arguments (what follows "--" on the
	// command line); the program is looked up in $PATH inside the
	// namespace. Required.
	Args []string
	// Env is the command's environment; nil: this process's. RootEnv is set
	// to the emulator root in it either way.
	Env []string
	// Stdin, Stdout and Stderr are the command's; nil: the null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Validate checks that c names a program.
func (c Command) Validate() error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return fmt.Errorf("%w: command: required: give the program to run after --", ErrInvalidConfig)
	}
	return nil
}
