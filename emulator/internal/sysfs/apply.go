package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Apply writes es below the live root, in order, each step idempotent, so
// that applying the same entries again after an interruption finishes the
// job: missing directories are created 0755; a file is written to a
// temporary file in its directory, synced and renamed over the old one (a
// reader sees the old content or the new, never a part); a link replaces
// whatever is at its path; a character device is created when missing and
// replaced when its number or mode differs (creating one needs root or
// CAP_MKNOD).
func Apply(root string, es []Entry) error {
	for _, e := range es {
		path := filepath.Join(root, e.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create directory of %s: %w", e.Path, err)
		}
		var err error
		switch e.Kind {
		case File:
			err = WriteFile(path, e.Content, e.Mode)
		case Link:
			err = replaceLink(path, relTarget(e))
		case CharDevice:
			err = charDevice(path, e)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", e.Path, err)
		}
	}
	return nil
}

// relTarget is e's link target relative to the link's directory.
func relTarget(e Entry) string {
	rel, err := filepath.Rel(filepath.Dir(e.Path), e.Target)
	if err != nil {
		return e.Target // both are relative to the root, so Rel cannot fail
	}
	return rel
}

// RelativeTarget is the content of the link e: its target relative to the
// link's directory.
func RelativeTarget(e Entry) string { return relTarget(e) }

// WriteFile replaces path with content: a temporary file in the same
// directory, synced and renamed over path, with mode set independent of
// the umask.
func WriteFile(path, content string, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error that matters is err
	}
	return err
}

func replaceLink(path, target string) error {
	if cur, err := os.Readlink(path); err == nil && cur == target {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-link")
	_ = os.Remove(tmp) // a leftover of an interrupted call
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func charDevice(path string, e Entry) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == e.Major && unix.Minor(st.Rdev) == e.Minor &&
			os.FileMode(st.Mode&0o777) == e.Mode.Perm() {
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	if err := unix.Mknod(path, unix.S_IFCHR|uint32(e.Mode.Perm()), int(unix.Mkdev(e.Major, e.Minor))); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("mknod needs root or CAP_MKNOD: %w", err)
		}
		return err
	}
	return os.Chmod(path, e.Mode)
}

// Remove removes each path below root and everything below it; a path
// that does not exist is not an error. It does not follow links and stops
// at another filesystem.
func Remove(root string, paths ...string) error {
	for _, p := range paths {
		if err := removeTree(filepath.Join(root, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

func removeTree(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		parent, err := os.Lstat(filepath.Dir(path))
		if err == nil && parent.Sys().(*syscall.Stat_t).Dev != fi.Sys().(*syscall.Stat_t).Dev {
			return fmt.Errorf("refuse to remove %s: it is on another filesystem (a mount point?)", path)
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := removeTree(filepath.Join(path, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return os.Remove(path)
}
