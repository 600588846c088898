package images

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// ErrMissingLibrary is wrapped when ldd cannot resolve a shared library.
var ErrMissingLibrary = errors.New("shared library not found")

// SharedLibraries returns, sorted, the absolute paths of the ELF interpreter
// and every shared library ldd reports for the file at hostPath. A file that
// is not ELF, or is statically linked, has none. A library ldd cannot find is
// an error wrapping ErrMissingLibrary.
func SharedLibraries(ctx context.Context, hostPath string) ([]string, error) {
	dynamic, err := isDynamicELF(hostPath)
	if err != nil {
		return nil, err
	}
	if !dynamic {
		return nil, nil
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ldd", hostPath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run ldd %s: %w: %s", hostPath, err, strings.TrimSpace(stderr.String()))
	}
	libs, err := parseLDD(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", hostPath, err)
	}
	return libs, nil
}

// isDynamicELF reports whether the file is an ELF object that needs the
// dynamic loader: it names an interpreter or lists DT_NEEDED libraries.
func isDynamicELF(hostPath string) (bool, error) {
	raw, err := os.Open(hostPath)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", hostPath, err)
	}
	defer raw.Close()
	magic := make([]byte, len(elf.ELFMAG))
	if _, err := io.ReadFull(raw, magic); err != nil || string(magic) != elf.ELFMAG {
		return false, nil // not ELF: a script, a data file
	}
	f, err := elf.NewFile(raw)
	if err != nil {
		return false, fmt.Errorf("read ELF %s: %w", hostPath, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true, nil
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return false, fmt.Errorf("read ELF %s: %w", hostPath, err)
	}
	return len(needed) > 0, nil
}

// parseLDD extracts library paths from ldd's output. It understands the three
// line forms glibc's ldd prints:
//
//	linux-vdso.so.1 (0x...)                           kernel-provided, skipped
//	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
//	/lib64/ld-linux-x86-64.so.2 (0x...)               the interpreter
//
// and fails on "libfoo.so => not found".
func parseLDD(out string) ([]string, error) {
	seen := map[string]bool{}
	var missing []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line == "statically linked" {
			continue
		}
		var p string
		if name, target, ok := strings.Cut(line, "=>"); ok {
			target = strings.TrimSpace(target)
			if target == "not found" {
				missing = append(missing, strings.TrimSpace(name))
				continue
			}
			p, _, _ = strings.Cut(target, " (")
		} else {
			p, _, _ = strings.Cut(line, " (")
		}
		p = strings.TrimSpace(p)
		if !strings.HasPrefix(p, "/") {
			continue // linux-vdso.so.1 and the like have no file
		}
		seen[p] = true
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrMissingLibrary, strings.Join(missing, ", "))
	}
	libs := make([]string, 0, len(seen))
	for p := range seen {
		libs = append(libs, p)
	}
	sort.Strings(libs)
	return libs, nil
}
