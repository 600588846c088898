package nvmlstate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNoState is returned by Update for a root without a state file.
var ErrNoState = errors.New("no NVML state file")

// LockSuffix names the lock file of the concurrency rule: <state>.lock.
const LockSuffix = ".lock"

// Update changes the state file under root following the concurrency rule
// (see "Concurrent updates"): it takes the exclusive flock on
// <state>.lock, reads and parses the state, calls fn, and when fn returns
// nil writes the changed state (validated) to a temporary file in the same
// directory, fsyncs it, renames it over the state file and bumps the
// generation counter (BumpGeneration) before releasing the lock. When fn
// fails nothing is written and its error is returned.
// Every Go writer of the state file goes through Update.
func Update(root string, fn func(*State) error) error {
	path := filepath.Join(root, filepath.FromSlash(RelativePath))
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("update NVML state under %s: %w (%s; render the root first)", root, ErrNoState, path)
	} else if err != nil {
		return fmt.Errorf("update NVML state under %s: %w", root, err)
	}
	lock, err := os.OpenFile(path+LockSuffix, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("update NVML state: open the lock: %w", err)
	}
	defer lock.Close()
	for {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update NVML state: lock %s: %w", lock.Name(), err)
	}
	s, err := ReadFile(path)
	if err != nil {
		return fmt.Errorf("update NVML state: %w", err)
	}
	if err := fn(s); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		return fmt.Errorf("update NVML state %s: %w", path, err)
	}
	if err := replaceFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("update NVML state %s: %w", path, err)
	}
	// After the rename, under the lock: a client that sees the counter move
	// reads the new file.
	if err := BumpGeneration(root); err != nil {
		return fmt.Errorf("update NVML state %s: %w", root, err)
	}
	return nil
}

// replaceFile writes data to a temporary file beside path, fsyncs it and
// renames it over path.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp.*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return nil
}
