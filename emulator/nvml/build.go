package nvml

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/klog/v2"
)

//go:embed shim/*.c shim/*.h
var sources embed.FS

// SONAME is the shared-object name the library records, the name NVML
// clients load.
const SONAME = "libnvidia-ml.so.1"

// ErrInvalidOptions classifies BuildOptions.Validate's errors.
var ErrInvalidOptions = errors.New("invalid NVML shim build options")

// BuildOptions configures BuildShim.
type BuildOptions struct {
	// Output is the file to write, e.g.
	// <root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driverVersion>. Its
	// directory must exist; an existing file is replaced atomically.
	// Required.
	Output string
	// HeaderDir, when set, is the directory of go-nvml's nvml.h (see
	// LocateGoNVML). The shim is then compiled against that header instead
	// of its bundled ABI subset, so the compiler checks every implemented
	// function's prototype and the struct layouts against NVML's own; the
	// library is the same. Empty: only the embedded sources and a C compiler
	// are needed.
	HeaderDir string
	// CC is the C compiler: gcc or a driver accepting gcc's flags.
	CC string
}

// DefaultBuildOptions returns the options BuildShim uses unless told
// otherwise: gcc, bundled ABI subset. Output must still be set.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{CC: "gcc"}
}

// Validate reports the first unusable option, naming it.
func (o BuildOptions) Validate() error {
	switch {
	case o.Output == "":
		return fmt.Errorf("%w: output is empty", ErrInvalidOptions)
	case strings.HasSuffix(o.Output, "/") || filepath.Base(o.Output) == "." || filepath.Base(o.Output) == "..":
		return fmt.Errorf("%w: output %q names a directory, not a file", ErrInvalidOptions, o.Output)
	case o.CC == "":
		return fmt.Errorf("%w: cc is empty", ErrInvalidOptions)
	}
	return nil
}

// BuildShim compiles the shim into o.Output. It writes a temporary file next
// to Output and renames it into place, so Output is either the old file or
// the complete new library, never a partial one. Compiler errors are
// returned with the compiler's output.
func BuildShim(ctx context.Context, o BuildOptions) (rerr error) {
	if err := o.Validate(); err != nil {
		return err
	}
	log := klog.FromContext(ctx)
	if o.HeaderDir != "" {
		if _, err := os.Stat(filepath.Join(o.HeaderDir, "nvml.h")); err != nil {
			return fmt.Errorf("build NVML shim %s: header dir: %w", o.Output, err)
		}
	}
	src, err := os.MkdirTemp("", "drakit-nvml-shim-src-")
	if err != nil {
		return fmt.Errorf("build NVML shim %s: %w", o.Output, err)
	}
	defer os.RemoveAll(src)
	if err := writeSources(src); err != nil {
		return fmt.Errorf("build NVML shim %s: %w", o.Output, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp-")
	if err != nil {
		return fmt.Errorf("build NVML shim %s: %w", o.Output, err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer func() {
		if rerr != nil {
			os.Remove(tmpName)
		}
	}()
	args := compilerArgs(src, tmpName, o.HeaderDir)
	log.V(4).Info("Compiling NVML shim", "cc", o.CC, "args", args)
	cmd := exec.CommandContext(ctx, o.CC, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace(out.Bytes()); len(msg) > 0 {
			return fmt.Errorf("compile NVML shim %s with %s: %w\n%s", o.Output, o.CC, err, msg)
		}
		return fmt.Errorf("compile NVML shim %s with %s: %w", o.Output, o.CC, err)
	}
	if err := os.Chmod(tmpName, 0o755); err != nil {
		return fmt.Errorf("build NVML shim %s: %w", o.Output, err)
	}
	if err := os.Rename(tmpName, o.Output); err != nil {
		return fmt.Errorf("build NVML shim %s: %w", o.Output, err)
	}
	log.V(2).Info("Built NVML shim", "output", o.Output, "headerDir", o.HeaderDir)
	return nil
}

func writeSources(dir string) error {
	return fs.WalkDir(sources, "shim", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path.Base(p)), b, 0o644)
	})
}

// compilerArgs are the compiler's arguments for sources in src and output
// out: position-independent shared object, warnings are errors, only the
// functions marked NVML_EXPORT visible, SONAME libnvidia-ml.so.1, no
// undefined symbols left for the loader to find.
func compilerArgs(src, out, headerDir string) []string {
	args := []string{
		"-shared", "-fPIC", "-O2", "-std=gnu11", "-pthread",
		"-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
		"-Wl,-soname," + SONAME, "-Wl,--no-undefined", "-Wl,-z,relro", "-Wl,-z,now",
	}
	if headerDir != "" {
		args = append(args, "-DDRAKIT_NVML_HEADER", "-I", headerDir)
	}
	args = append(args, "-o", out)
	for _, f := range sourceFiles() {
		args = append(args, filepath.Join(src, f))
	}
	return args
}

// sourceFiles are the C files of the shim, in name order.
func sourceFiles() []string {
	var files []string
	// Reading the embedded directory cannot fail; the error is only WalkDir's signature.
	_ = fs.WalkDir(sources, "shim", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".c") {
			files = append(files, path.Base(p))
		}
		return err
	})
	sort.Strings(files)
	return files
}

// SourceDigest identifies the embedded sources and the compiler flags: two
// builds with equal digests (and equal options) produce the same library.
// Test helpers use it to cache builds.
func SourceDigest() string {
	h := sha256.New()
	// Reading the embedded files cannot fail; the error is only WalkDir's signature.
	_ = fs.WalkDir(sources, "shim", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return err
	})
	fmt.Fprintf(h, "%q", compilerArgs("SRC", "OUT", ""))
	return hex.EncodeToString(h.Sum(nil))
}
