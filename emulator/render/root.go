package render

import (
	kfs "drakit.dev/drakit/emulator/internal/sysfs"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// MarkerFile, directly under the root, marks a root this package owns.
const MarkerFile = ".drakit-emulator-root"

const markerContent = "drakit emulator root v1: rendered by drakit emulator render; everything here is replaced on the next render\n"

// Below the root, Render writes the new tree into stagingDir and, while it
// swaps the new entries in, moves the ones they replace into previousDir.
// An interrupted render leaves them behind; the next one removes them.
const (
	stagingDir  = ".drakit-render-new"
	previousDir = ".drakit-render-old"
)

var (
	// ErrNotOwned is returned for a root that is not a directory this
	// package may replace: a non-empty one without MarkerFile, a file, a
	// symbolic link.
	ErrNotOwned = errors.New("directory is not an emulator root")
	// ErrMountPoint is returned for a root with a mount point below it:
	// rendering would delete what is mounted there.
	ErrMountPoint = errors.New("mount point below the emulator root")
)

// target is the root one render replaces, claimed by claimRoot.
type target struct {
	root string
	dev  uint64 // the root's filesystem
	// created: the render created the root, so a failed one removes it;
	// marked: the root was empty and the render marked it, so a failed one
	// removes the marker again.
	created, marked bool
}

// claimRoot checks that root may be rendered into and prepares it: it
// creates a missing root, accepts an empty one and one it rendered before,
// and refuses (changing nothing) a symbolic link, a file, a foreign
// directory and a root with a mount point below it, so a bind mount of real
// sysfs is never deleted. A root may itself be a mount point. Then it marks
// the root, removes what an interrupted render left, and creates the empty
// staging directory.
func claimRoot(root string) (*target, error) {
	t := &target{root: root}
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("create emulator root %s: %w", root, err)
		}
		t.created = true
		if fi, err = os.Lstat(root); err != nil {
			return nil, fmt.Errorf("inspect new emulator root %s: %w", root, err)
		}
	case err != nil:
		return nil, fmt.Errorf("inspect emulator root %s: %w", root, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		dest, err := filepath.EvalSymlinks(root)
		if err != nil {
			dest, _ = os.Readlink(root)
		}
		return nil, fmt.Errorf("emulator root %s: %w: it is a symbolic link to %s, and the root must be a real directory "+
			"(render into the link's target itself)", root, ErrNotOwned, dest)
	case !fi.IsDir():
		return nil, fmt.Errorf("emulator root %s: %w: it is not a directory", root, ErrNotOwned)
	default:
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("read emulator root %s: %w", root, err)
		}
		if len(entries) == 0 {
			t.marked = true
			break
		}
		if _, err := os.Lstat(filepath.Join(root, MarkerFile)); err != nil {
			return nil, fmt.Errorf("emulator root %s: %w: it is not empty and has no %s; "+
				"render into an empty or new directory", root, ErrNotOwned, MarkerFile)
		}
		if err := checkNoMounts(root, fi.Sys().(*syscall.Stat_t).Dev); err != nil {
			return nil, err
		}
	}
	t.dev = fi.Sys().(*syscall.Stat_t).Dev
	for _, dir := range []string{stagingDir, previousDir} {
		if err := removeTree(filepath.Join(root, dir), t.dev); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, t.abort(fmt.Errorf("remove what an interrupted render left in %s: %w", root, err))
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, t.abort(fmt.Errorf("chmod emulator root %s: %w", root, err))
	}
	if err := writeFileAtomic(filepath.Join(root, MarkerFile), []byte(markerContent), 0o644); err != nil {
		return nil, t.abort(fmt.Errorf("mark emulator root %s: write %s: %w", root, MarkerFile, withoutPath(err)))
	}
	if err := os.Mkdir(t.staging(), 0o755); err != nil {
		return nil, t.abort(fmt.Errorf("render into %s: create %s: %w", root, stagingDir, withoutPath(err)))
	}
	return t, nil
}

// staging is the directory the new tree is written to.
func (t *target) staging() string { return filepath.Join(t.root, stagingDir) }

// checkNoMounts fails with ErrMountPoint when a mount point lies below root
// (a filesystem boundary, or an entry of the mount table: a bind mount on
// the same filesystem has no boundary).
func checkNoMounts(root string, dev uint64) error {
	mounted := func(path string) error {
		return fmt.Errorf("emulator root %s: %w: %s; unmount it and render again (nothing was changed)", root, ErrMountPoint, path)
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		points, err := mountPoints()
		if err != nil {
			return fmt.Errorf("check emulator root %s for mount points: %w", root, err)
		}
		for _, mp := range points {
			if rel, ok := strings.CutPrefix(mp, real+"/"); ok {
				return mounted(filepath.Join(root, rel))
			}
		}
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Sys().(*syscall.Stat_t).Dev != dev {
			return mounted(path)
		}
		return nil
	})
}

// mountPoints lists this process's mount points (/proc/self/mountinfo);
// none when /proc is not mounted.
func mountPoints() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime … - ext3 /dev/root rw": the
		// fifth field, with space, tab, newline and backslash octal-escaped.
		if f := strings.Fields(line); len(f) >= 5 {
			out = append(out, unescapeMountPath(f[4]))
		}
	}
	return out, nil
}

func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// swap puts the staged tree in place: each entry of the staging directory
// replaces the root's entry of that name, and the root's other entries go
// (the marker stays); what they replace is moved into previousDir, for
// removePrevious. It is renames within one filesystem; if one fails, the
// ones done are undone, so the root is the previous one or the new one, and
// a mix of both only while swap runs.
func (t *target) swap() error {
	staged, err := os.ReadDir(t.staging())
	if err != nil {
		return fmt.Errorf("read %s: %w", stagingDir, withoutPath(err))
	}
	current, err := os.ReadDir(t.root)
	if err != nil {
		return fmt.Errorf("read the root: %w", withoutPath(err))
	}
	prev := filepath.Join(t.root, previousDir)
	if err := os.Mkdir(prev, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", previousDir, withoutPath(err))
	}
	type move struct{ from, to string }
	var done []move
	rename := func(from, to string) error {
		if err := os.Rename(from, to); err != nil {
			for i := len(done) - 1; i >= 0; i-- {
				_ = os.Rename(done[i].to, done[i].from) // the reverse of a rename that worked; abort reports what is left
			}
			return fmt.Errorf("swap the new tree in: move %s: %w", filepath.Base(from), withoutPath(err))
		}
		done = append(done, move{from, to})
		return nil
	}
	replaced := map[string]bool{}
	for _, e := range staged {
		name := e.Name()
		if _, err := os.Lstat(filepath.Join(t.root, name)); err == nil {
			if err := rename(filepath.Join(t.root, name), filepath.Join(prev, name)); err != nil {
				return err
			}
			replaced[name] = true
		}
		if err := rename(filepath.Join(t.staging(), name), filepath.Join(t.root, name)); err != nil {
			return err
		}
	}
	for _, e := range current {
		name := e.Name()
		if name == MarkerFile || name == stagingDir || name == previousDir || replaced[name] {
			continue
		}
		if err := rename(filepath.Join(t.root, name), filepath.Join(prev, name)); err != nil {
			return err
		}
	}
	return nil
}

// removePrevious deletes what swap replaced, and the staging directory swap
// emptied, and syncs the root.
func (t *target) removePrevious() error {
	for _, dir := range []string{previousDir, stagingDir} {
		if err := removeTree(filepath.Join(t.root, dir), t.dev); err != nil {
			return fmt.Errorf("remove %s: %w", dir, withoutPath(err))
		}
	}
	if err := syncDir(t.root); err != nil {
		return fmt.Errorf("sync the root: %w", withoutPath(err))
	}
	return nil
}

// abort undoes a render that failed with cause, so that the root is the
// previous one or none: it removes the root when the render created it, and
// otherwise the staging directory, the (empty) previousDir of a swap that
// was undone, and the marker when the root was empty. It returns cause,
// saying which, and how to fix a full disk.
func (t *target) abort(cause error) error {
	var err error
	leftover := t.root
	if t.created {
		err = removeTree(t.root, t.dev)
	} else {
		for _, rm := range []func() error{
			func() error { leftover = t.staging(); return removeTree(t.staging(), t.dev) },
			func() error { leftover = filepath.Join(t.root, previousDir); return os.Remove(leftover) },
			func() error {
				leftover = filepath.Join(t.root, MarkerFile)
				if !t.marked {
					return nil
				}
				return os.Remove(leftover)
			},
		} {
			if err = rm(); err != nil && !errors.Is(err, fs.ErrNotExist) {
				break
			}
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("%w; cleaning up failed too, remove %s by hand: %v", cause, leftover, withoutPath(err))
	}
	left := "the previous root is left as it was"
	if t.created {
		left = "no root is left"
	}
	if errors.Is(cause, syscall.ENOSPC) {
		return fmt.Errorf("%w: free space on the root's filesystem or render into another directory; %s", cause, left)
	}
	return fmt.Errorf("%w; %s", cause, left)
}

// withoutPath strips the path the os package puts into its errors, for
// messages that name the file themselves.
func withoutPath(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
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

// writeFileAtomic replaces path with data: it writes a temporary file in the
// same directory, fsyncs it, renames it over path and fsyncs the directory,
// so path is the old file or the new one, never a part of either.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := kfs.WriteFile(path, string(data), mode); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
