package render

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MarkerFile, directly under the root, marks a root this package owns.
const MarkerFile = ".drakit-emulator-root"

const markerContent = "drakit emulator root v1: rendered by drakit emulator render; everything here is replaced on the next render\n"

// ErrNotOwned is returned for a non-empty root without MarkerFile.
var ErrNotOwned = errors.New("directory is not an emulator root")

// claimRoot makes root an empty directory that carries the marker: it
// creates a missing root, accepts an empty one, and clears one it rendered
// before. It never descends into another filesystem (a mount point below the
// root is an error), so a bind mount of real sysfs is never deleted.
func claimRoot(root string) error {
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("create emulator root %s: %w", root, err)
		}
	case err != nil:
		return fmt.Errorf("inspect emulator root %s: %w", root, err)
	case !fi.IsDir():
		return fmt.Errorf("emulator root %s: %w: it is not a directory", root, ErrNotOwned)
	default:
		entries, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("read emulator root %s: %w", root, err)
		}
		if len(entries) > 0 {
			if _, err := os.Lstat(filepath.Join(root, MarkerFile)); err != nil {
				return fmt.Errorf("emulator root %s: %w: it is not empty and has no %s; "+
					"render into an empty or new directory", root, ErrNotOwned, MarkerFile)
			}
			dev := fi.Sys().(*syscall.Stat_t).Dev
			for _, e := range entries {
				if e.Name() == MarkerFile {
					continue
				}
				if err := removeTree(filepath.Join(root, e.Name()), dev); err != nil {
					return fmt.Errorf("clear emulator root %s: %w", root, err)
				}
			}
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return fmt.Errorf("chmod emulator root %s: %w", root, err)
	}
	if err := os.WriteFile(filepath.Join(root, MarkerFile), []byte(markerContent), 0o644); err != nil {
		return fmt.Errorf("mark emulator root %s: %w", root, err)
	}
	return nil
}

// removeTree removes path and everything below it, refusing to cross into
// another filesystem.
func removeTree(path string, dev uint64) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Sys().(*syscall.Stat_t).Dev != dev {
		return fmt.Errorf("refuse to remove %s: it is on another filesystem (a mount point?); unmount it first", path)
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := removeTree(filepath.Join(path, e.Name()), dev); err != nil {
				return err
			}
		}
	}
	return os.Remove(path)
}

// writer writes below a root, keeping the first error: call its methods in
// sequence and check err once. Modes are set explicitly, independent of the
// umask.
type writer struct {
	root string
	err  error
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// dir creates rel and its missing parents with mode 0755.
func (w *writer) dir(rel string) {
	if w.err != nil || rel == "." {
		return
	}
	path := filepath.Join(w.root, rel)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.IsDir() {
			w.fail(fmt.Errorf("create directory %s: a %s is in the way", path, fi.Mode().Type()))
		}
		return
	}
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		w.fail(fmt.Errorf("create directory %s: %w", path, err))
		return
	}
	if err := os.Chmod(path, 0o755); err != nil {
		w.fail(fmt.Errorf("chmod %s: %w", path, err))
	}
}

// file writes content to rel with the given mode.
func (w *writer) file(rel string, mode os.FileMode, content string) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		w.fail(fmt.Errorf("write %s: %w", path, err))
		return
	}
	if err := os.Chmod(path, mode); err != nil {
		w.fail(fmt.Errorf("chmod %s: %w", path, err))
	}
}

// link makes rel a symbolic link to the root-relative path target, written
// relative to rel's directory as the kernel writes sysfs links.
func (w *writer) link(rel, target string) {
	from := filepath.Dir(rel)
	relTarget, err := filepath.Rel(from, target)
	if err != nil {
		w.fail(fmt.Errorf("link %s to %s: %w", rel, target, err))
		return
	}
	w.symlink(rel, relTarget)
}

// symlink makes rel a symbolic link with the literal target.
func (w *writer) symlink(rel, target string) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	if err := os.Symlink(target, path); err != nil {
		w.fail(fmt.Errorf("link %s to %s: %w", path, target, err))
	}
}

// copyFile copies the regular file src to rel with the given mode.
func (w *writer) copyFile(rel string, mode os.FileMode, src string) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	path := filepath.Join(w.root, rel)
	if err := copyFile(path, src, mode); err != nil {
		w.fail(fmt.Errorf("copy %s to %s: %w", src, path, err))
	}
}

func copyFile(dst, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
