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

//go:embed shim/*.c shim/*.h smi/*.c smi/*.h
var sources embed.FS

// SONAME is the shared-object name the library records, the name NVML
// clients load.
const SONAME = "libnvidia-ml.so.1"

// NvidiaSMIName is the file name of the emulator's nvidia-smi (BuildNvidiaSMI).
const NvidiaSMIName = "nvidia-smi"

// ErrInvalidOptions classifies BuildOptions.Validate's errors.
var ErrInvalidOptions = errors.New("invalid NVML shim build options")

// BuildOptions configures BuildShim and BuildNvidiaSMI.
type BuildOptions struct {
	// Output is the file to write, e.g. _output/lib/libnvidia-ml.so (the
	// shim) or _output/lib/nvidia-smi. Its directory must exist; an
	// existing file is replaced atomically. Required.
	Output string
	// HeaderDir, when set, is the directory of go-nvml's nvml.h (see
	// LocateGoNVML). The sources are then compiled against that header
	// instead of the shim's bundled ABI subset, so the compiler checks every
	// implemented function's prototype, every call nvidia-smi makes and the
	// struct layouts against NVML's own; the output is the same. Empty: only
	// the embedded sources and a C compiler are needed.
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
func BuildShim(ctx context.Context, o BuildOptions) error {
	return build(ctx, o, "NVML shim", func(src, out string) []string { return compilerArgs(src, out, o.HeaderDir) })
}

// BuildNvidiaSMI compiles the emulator's nvidia-smi into o.Output, as
// BuildShim does the shim: a static executable (it needs the C library's
// static archive, libc.a: libc6-dev on Debian and Ubuntu, glibc-static on
// Fedora) that links the shim's sources with its own (smi/), so it answers
// from the emulator root's NVML state as the shim does, with no shared
// library to load, in a container or chrooted into the root alike. See
// the package documentation for what it answers.
func BuildNvidiaSMI(ctx context.Context, o BuildOptions) error {
	return build(ctx, o, "nvidia-smi", func(src, out string) []string { return smiCompilerArgs(src, out, o.HeaderDir) })
}

// build compiles the embedded sources, with the compiler arguments args
// gives for the source directory and a temporary output, into o.Output.
func build(ctx context.Context, o BuildOptions, what string, args func(src, out string) []string) (rerr error) {
	if err := o.Validate(); err != nil {
		return err
	}
	log := klog.FromContext(ctx)
	if o.HeaderDir != "" {
		if _, err := os.Stat(filepath.Join(o.HeaderDir, "nvml.h")); err != nil {
			return fmt.Errorf("build %s %s: header dir: %w", what, o.Output, err)
		}
	}
	src, err := os.MkdirTemp("", "drakit-nvml-shim-src-")
	if err != nil {
		return fmt.Errorf("build %s %s: %w", what, o.Output, err)
	}
	defer os.RemoveAll(src)
	if err := writeSources(src); err != nil {
		return fmt.Errorf("build %s %s: %w", what, o.Output, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp-")
	if err != nil {
		return fmt.Errorf("build %s %s: %w", what, o.Output, err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer func() {
		if rerr != nil {
			os.Remove(tmpName)
		}
	}()
	cargs := args(src, tmpName)
	log.V(4).Info("Compiling", "what", what, "cc", o.CC, "args", cargs)
	cmd := exec.CommandContext(ctx, o.CC, cargs...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace(out.Bytes()); len(msg) > 0 {
			return fmt.Errorf("compile %s %s with %s: %w\n%s", what, o.Output, o.CC, err, msg)
		}
		return fmt.Errorf("compile %s %s with %s: %w", what, o.Output, o.CC, err)
	}
	if err := os.Chmod(tmpName, 0o755); err != nil {
		return fmt.Errorf("build %s %s: %w", what, o.Output, err)
	}
	if err := os.Rename(tmpName, o.Output); err != nil {
		return fmt.Errorf("build %s %s: %w", what, o.Output, err)
	}
	log.V(2).Info("Built", "what", what, "output", o.Output, "headerDir", o.HeaderDir)
	return nil
}

// writeSources writes the shim's and nvidia-smi's sources into dir, side by
// side (their names differ: nvidia-smi's start with smi).
func writeSources(dir string) error {
	return fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
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

// smiCompilerArgs are the compiler's arguments for nvidia-smi: a static
// executable of the shim's and nvidia-smi's C files, warnings are errors.
func smiCompilerArgs(src, out, headerDir string) []string {
	args := []string{"-static", "-O2", "-std=gnu11", "-pthread", "-Wall", "-Wextra", "-Werror"}
	if headerDir != "" {
		args = append(args, "-DDRAKIT_NVML_HEADER", "-I", headerDir)
	}
	args = append(args, "-o", out)
	for _, f := range append(sourceFiles(), smiSourceFiles()...) {
		args = append(args, filepath.Join(src, f))
	}
	return args
}

// sourceFiles are the C files of the shim, in name order.
func sourceFiles() []string { return cFiles("shim") }

// smiSourceFiles are nvidia-smi's own C files, in name order.
func smiSourceFiles() []string { return cFiles("smi") }

// cFiles are the C files of an embedded directory, in name order.
func cFiles(dir string) []string {
	var files []string
	// Reading the embedded directory cannot fail; the error is only WalkDir's signature.
	_ = fs.WalkDir(sources, dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".c") {
			files = append(files, path.Base(p))
		}
		return err
	})
	sort.Strings(files)
	return files
}

// SourceDigest identifies the embedded sources and the compiler flags: two
// builds with equal digests (and equal options) produce the same library
// and nvidia-smi. Test helpers use it to cache builds.
func SourceDigest() string {
	h := sha256.New()
	// Reading the embedded files cannot fail; the error is only WalkDir's signature.
	_ = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return err
	})
	fmt.Fprintf(h, "%q%q", compilerArgs("SRC", "OUT", ""), smiCompilerArgs("SRC", "OUT", ""))
	return hex.EncodeToString(h.Sum(nil))
}
