package nicdriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// pollInterval is how often the driver looks whether VFs appeared or went.
const pollInterval = 10 * time.Millisecond

// ErrVFTimeout classifies the errors of a VF change that did not show in
// sysfs in time.
var ErrVFTimeout = errors.New("VFs did not change in time")

// writeNumVFs writes n to the PF's sriov_numvfs, as `echo n >
// sriov_numvfs` does. A real kernel applies it before the write returns
// and refuses an invalid count with the write's error (EBUSY for a
// non-zero count while VFs exist, ERANGE/EINVAL above sriov_totalvfs);
// drakit's emulator applies it shortly after and restores the old value
// when it is invalid, which waitNumVFs reports.
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

// setNumVFs changes the PF's VF count from 0 to n or from n to 0 and waits
// until sysfs shows exactly n VFs (virtfn0…virtfn<n-1>) and sriov_numvfs
// reads n back.
func (s sysfs) setNumVFs(ctx context.Context, pf string, n int, timeout time.Duration) error {
	if err := s.writeNumVFs(pf, n); err != nil {
		return err
	}
	var (
		last    vfState
		lastErr error
	)
	return waitFor(ctx, timeout,
		func() (bool, error) {
			// Read again after an error: VFs come and go while sysfs
			// is read.
			st, err := s.vfState(pf)
			if lastErr = err; err != nil {
				return false, nil
			}
			last = st
			return st.complete(n), nil
		},
		func() error {
			if lastErr != nil {
				return fmt.Errorf("PF %s: wrote %d to sriov_numvfs; after %s: %w", pf, n, timeout, lastErr)
			}
			return fmt.Errorf("PF %s: wrote %d to sriov_numvfs; after %s it reads %d and %d VFs (virtfn links) exist "+
				"(a count the PF refuses is restored: the kernel allows a new non-zero count only after 0, and at most sriov_totalvfs)",
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

// vfBDF computes the PCI address of VF i of the PF at bdf from the SR-IOV
// capability's offset and stride (the kernel's pci_iov_virtfn_bus/devfn):
// routing ID = bus<<8 | devfn; VF i's is the PF's + offset + i·stride.
func vfBDF(pf PF, i int) (string, bool) {
	if !pf.HasVFLayout || (pf.VFStride == 0 && i > 0) {
		return "", false
	}
	var domain, bus, dev, fn int
	if _, err := fmt.Sscanf(pf.BDF, "%04x:%02x:%02x.%1x", &domain, &bus, &dev, &fn); err != nil {
		return "", false
	}
	rid := bus<<8 | dev<<3 | fn
	rid += pf.VFOffset + i*pf.VFStride
	if rid > 0xffff {
		return "", false
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain, rid>>8, (rid>>3)&0x1f, rid&7), true
}
