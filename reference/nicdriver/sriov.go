package nicdriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"drakit.dev/drakit/internal/nichw"
)

// pollInterval is how often the driver looks whether VFs appeared or went.
const pollInterval = 10 * time.Millisecond

// ErrVFTimeout classifies the errors of a VF change that did not show in
// sysfs in time.
var ErrVFTimeout = errors.New("VFs did not change in time")

// writeNumVFs writes n to the PF's sriov_numvfs, as `echo n >
// sriov_numvfs` does. A real kernel applies it before the write returns
// and refuses an invalid count with the write's error (EBUSY for a
// non-zero count while VFs exist, ERANGE/EINVAL above sriov_totalvfs,
// ENOENT without a driver); drakit's emulator applies it shortly after and
// puts the old count back when it is invalid, which setNumVFs reports.
func (s sysfs) writeNumVFs(pf string, n int) error {
	p := s.pciPath(pf, "sriov_numvfs")
	// O_TRUNC: sysfs ignores it; a plain file (the emulator's) needs it.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write %d to %s: %w", n, p, err)
	}
	if _, err := f.WriteString(strconv.Itoa(n) + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %d to %s: %w", n, p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %d to %s: %w", n, p, err)
	}
	return nil
}

// vfState is what sysfs shows of a PF's VFs.
type vfState struct {
	numVFs int
	links  map[int]string // virtfn<i> → VF BDF
}

func (s sysfs) vfState(pf string) (vfState, error) {
	n, err := s.readNumVFs(pf)
	if err != nil {
		return vfState{}, err
	}
	links, err := s.virtfnLinks(pf)
	if err != nil {
		return vfState{}, err
	}
	return vfState{numVFs: n, links: links}, nil
}

// complete reports whether exactly VFs 0…n-1 exist and sriov_numvfs reads n.
func (st vfState) complete(n int) bool {
	if st.numVFs != n || len(st.links) != n {
		return false
	}
	for i := range n {
		if _, ok := st.links[i]; !ok {
			return false
		}
	}
	return true
}

// waitFor polls cond until it is true, ctx ends or timeout passes; on
// timeout it returns describe's error wrapped in ErrVFTimeout, when ctx
// ends first ctx's error with describe's.
func waitFor(parent context.Context, timeout time.Duration, cond func() (bool, error), describe func() error) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if ok, err := cond(); err != nil || ok {
				return err
			}
			if err := parent.Err(); err != nil {
				return fmt.Errorf("%w (stopped waiting: %w)", describe(), err)
			}
			return fmt.Errorf("%w: %w", ErrVFTimeout, describe())
		case <-t.C:
		}
	}
}

// writeAttempts is how often setNumVFs writes a count that sriov_numvfs
// does not keep.
const writeAttempts = 3

// putBackError is a count sriov_numvfs did not keep: it read Read again.
type putBackError struct{ Read int }

func (e *putBackError) Error() string { return fmt.Sprintf("sriov_numvfs reads %d again", e.Read) }

// setNumVFs changes the PF's VF count from 0 to n or from n to 0 and waits
// until sysfs shows exactly n VFs (virtfn0…virtfn<n-1>), the VFs that go
// are gone and sriov_numvfs reads n back. sriov_numvfs reading another
// count while it waits means the write was refused (the emulator puts the
// old count back) or lost (the emulator writes sriov_numvfs last, by
// rename, when it applies a write, which can undo a write made while it
// finished the previous one): the count is written again, writeAttempts
// times in all, then the refusal is the error. A kernel keeps a count it
// takes and fails the write of one it refuses, so neither happens there.
func (s sysfs) setNumVFs(ctx context.Context, pf string, n int, timeout time.Duration) error {
	// The VFs that go (those at and above n): removing one ends with its
	// directory, so wait for those too, not only for their virtfn links.
	before, err := s.vfState(pf)
	if err != nil {
		return err
	}
	var going []string
	if pfDir, err := filepath.EvalSymlinks(s.pciPath(pf)); err == nil {
		for i, bdf := range before.links {
			if i >= n {
				going = append(going, filepath.Join(filepath.Dir(pfDir), bdf), filepath.Join(s.root, pciDevicesDir, bdf))
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		if err := s.writeNumVFs(pf, n); err != nil {
			return err
		}
		err := s.waitNumVFs(ctx, pf, n, going, time.Until(deadline), timeout)
		var putBack *putBackError
		if !errors.As(err, &putBack) {
			return err
		}
		if attempt < writeAttempts {
			time.Sleep(5 * pollInterval)
			continue
		}
		return fmt.Errorf("PF %s: wrote %d to sriov_numvfs %d times, and each time it read %d again: the count was refused "+
			"(a kernel allows a new non-zero count only after 0, at most sriov_totalvfs, and only with a driver bound)", pf, n, attempt, putBack.Read)
	}
}

// waitNumVFs waits, at most wait, until sysfs shows exactly n VFs, the
// paths going are gone and sriov_numvfs reads n; a sriov_numvfs that reads
// another count is a putBackError. timeout is the whole wait's, for
// errors.
func (s sysfs) waitNumVFs(ctx context.Context, pf string, n int, going []string, wait, timeout time.Duration) error {
	var (
		last    vfState
		lastErr error
	)
	return waitFor(ctx, max(wait, 0),
		func() (bool, error) {
			// Read again after an error: VFs come and go while sysfs
			// is read.
			st, err := s.vfState(pf)
			if lastErr = err; err != nil {
				return false, nil
			}
			last = st
			if st.numVFs != n {
				// The file held n after the write.
				return false, &putBackError{Read: st.numVFs}
			}
			if !st.complete(n) {
				return false, nil
			}
			for _, p := range going {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					lastErr = fmt.Errorf("VF %s is still there", p)
					return false, nil
				}
			}
			return true, nil
		},
		func() error {
			if lastErr != nil {
				return fmt.Errorf("PF %s: wrote %d to sriov_numvfs; after %s: %w", pf, n, timeout, lastErr)
			}
			return fmt.Errorf("PF %s: wrote %d to sriov_numvfs; after %s it reads %d and %d VFs (virtfn links) exist",
				pf, n, timeout, last.numVFs, len(last.links))
		})
}

// removeVFs resets the PF's VF count to 0 and waits for its VFs to go;
// a PF without VFs, or one that is gone, is left as it is.
func (s sysfs) removeVFs(ctx context.Context, pf string, timeout time.Duration) error {
	if _, err := os.Stat(s.pciPath(pf)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := s.vfState(pf)
	if err != nil {
		return err
	}
	if st.complete(0) {
		return nil
	}
	return s.setNumVFs(ctx, pf, 0, timeout)
}

// vfBDF computes the PCI address of VF i of the PF from the SR-IOV
// capability's offset and stride (nichw.VFAddress, the kernel's
// pci_iov_virtfn_bus/devfn).
func vfBDF(pf PF, i int) (string, bool) {
	if !pf.HasVFLayout || (pf.VFStride == 0 && i > 0) {
		return "", false
	}
	addr, err := nichw.ParseAddress(pf.BDF)
	if err != nil {
		return "", false
	}
	vf, ok := nichw.VFAddress(addr, pf.VFOffset, pf.VFStride, i)
	if !ok {
		return "", false
	}
	return vf.String(), true
}
