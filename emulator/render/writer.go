package render

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	kfs "drakit.dev/drakit/emulator/internal/sysfs"
)

// writer writes below a root, keeping the first error: call its methods in
// sequence and check err once. Modes are set explicitly, independent of the
// umask. Errors name paths relative to the root, once.
type writer struct {
	root string
	err  error
}

// fail records that op on rel failed with err, unless an error came first.
func (w *writer) fail(op, rel string, err error) {
	if w.err != nil {
		return
	}
	var pe *fs.PathError
	var le *os.LinkError
	if (errors.As(err, &pe) && w.inside(pe.Path)) || (errors.As(err, &le) && w.inside(le.New)) {
		err = withoutPath(err) // the message names rel
	}
	w.err = fmt.Errorf("%s %s: %w", op, rel, err)
}

func (w *writer) inside(path string) bool {
	return path == w.root || strings.HasPrefix(path, w.root+string(filepath.Separator))
}

// dir creates rel and its missing parents with mode 0755.
func (w *writer) dir(rel string) {
	if w.err != nil || rel == "." {
		return
	}
	path := filepath.Join(w.root, rel)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.IsDir() {
			w.fail("create directory", rel, fmt.Errorf("a %s is in the way", fi.Mode().Type()))
		}
		return
	}
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		w.fail("create directory", rel, err)
		return
	}
	if err := os.Chmod(path, 0o755); err != nil {
		w.fail("chmod", rel, err)
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
		w.fail("write", rel, err)
		return
	}
	if err := os.Chmod(path, mode); err != nil {
		w.fail("chmod", rel, err)
	}
}

// atomicFile writes content to rel with the given mode through a temporary
// file that it fsyncs and renames (writeFileAtomic).
func (w *writer) atomicFile(rel string, mode os.FileMode, content string) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	if err := writeFileAtomic(filepath.Join(w.root, rel), []byte(content), mode); err != nil {
		w.fail("write", rel, err)
	}
}

// link makes rel a symbolic link to the root-relative path target, written
// relative to rel's directory as the kernel writes sysfs links.
func (w *writer) link(rel, target string) {
	from := filepath.Dir(rel)
	relTarget, err := filepath.Rel(from, target)
	if err != nil {
		w.fail("link", rel, fmt.Errorf("to %s: %w", target, err))
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
	if err := os.Symlink(target, filepath.Join(w.root, rel)); err != nil {
		w.fail("link", rel, err)
	}
}

// copyFile copies the regular file src to rel with the given mode.
func (w *writer) copyFile(rel string, mode os.FileMode, src string) {
	w.dir(filepath.Dir(rel))
	if w.err != nil {
		return
	}
	if err := copyFile(filepath.Join(w.root, rel), src, mode); err != nil {
		w.fail("copy "+src+" to", rel, err)
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

// entries writes sysfs entries (package emulator/internal/sysfs) below the
// root: files, links (made relative) and character devices.
func (w *writer) entries(es []kfs.Entry) {
	for _, e := range es {
		switch e.Kind {
		case kfs.File:
			w.file(e.Path, e.Mode, e.Content)
		case kfs.Link:
			w.link(e.Path, e.Target)
		case kfs.CharDevice:
			w.charDevice(e.Path, e.Major, e.Minor, e.Mode)
		}
	}
}
