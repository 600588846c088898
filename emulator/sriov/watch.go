package sriov

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Result is what the watcher did with a PF's sriov_numvfs.
type Result struct {
	// PF is the PF's address.
	PF string
	// Value is what the file held ("4\n"); Requested its number, -1 when
	// it is not one.
	Value     string
	Requested int
	// NumVFs is the PF's VF count afterwards.
	NumVFs int
	// Err is why the value was refused; the file then holds NumVFs again.
	Err error
}

// Watcher applies the values written into root's sriov_numvfs files.
type Watcher struct {
	root    string
	fw      *fsnotify.Watcher
	results chan<- Result
	// pfs maps a watched PF directory (absolute, links resolved) to the
	// PF's address.
	pfs map[string]string
}

// NewWatcher watches every SR-IOV PF of root (and root itself, for a new
// render); the watches are in place when it returns, so a write made after
// it returns is seen. Run applies the writes. Each value handled is sent on
// results when it is not nil (Run waits for the receiver).
func NewWatcher(root string, results chan<- Result) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	w := &Watcher{root: root, fw: fw, results: results}
	if err := fw.Add(root); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if err := w.addPFs(); err != nil {
		fw.Close()
		return nil, err
	}
	return w, nil
}

// addPFs (re)lists the PFs and watches their directories.
func (w *Watcher) addPFs() error {
	pfs, err := PFs(w.root)
	if err != nil {
		return err
	}
	w.pfs = map[string]string{}
	for _, pf := range pfs {
		dir, err := filepath.EvalSymlinks(filepath.Join(w.root, pf.Dir))
		if err != nil {
			return err
		}
		if err := w.fw.Add(dir); err != nil {
			return fmt.Errorf("watch PF %s: %w", pf.Address, err)
		}
		w.pfs[dir] = pf.Address
	}
	return nil
}

// PFs lists the addresses of the watched PFs.
func (w *Watcher) PFs() []string {
	var out []string
	for _, a := range w.pfs {
		out = append(out, a)
	}
	return out
}

// Watch applies the values written into root's sriov_numvfs files until ctx
// ends (NewWatcher, then Run); it logs through klog.FromContext(ctx).
func Watch(ctx context.Context, root string) error {
	w, err := NewWatcher(root, nil)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// Run first applies what each PF's sriov_numvfs holds (values written while
// no watcher ran), then every write, until ctx ends; it closes the watcher.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.fw.Close()
	logger := klog.FromContext(ctx)
	logger.Info("Watching SR-IOV PFs", "root", w.root, "pfs", len(w.pfs))
	for dir, addr := range w.pfs {
		w.handle(ctx, dir, addr)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.fw.Errors:
			if !ok {
				return nil
			}
			logger.Error(err, "Watching SR-IOV PFs")
		case ev, ok := <-w.fw.Events:
			if !ok {
				return nil
			}
			dir, name := filepath.Dir(ev.Name), filepath.Base(ev.Name)
			if dir == filepath.Clean(w.root) && name == "sys" && ev.Has(fsnotify.Create) {
				// A new render swapped a new tree in: its PFs have no VFs.
				if err := w.addPFs(); err != nil {
					logger.Error(err, "Watching the PFs of a new render", "root", w.root)
				}
				logger.Info("Watching the PFs of a new render", "root", w.root, "pfs", len(w.pfs))
				continue
			}
			addr, ok := w.pfs[dir]
			if !ok || name != "sriov_numvfs" || !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Create) {
				continue
			}
			w.handle(ctx, dir, addr)
		}
	}
}

// handle applies the value in the PF's sriov_numvfs.
func (w *Watcher) handle(ctx context.Context, dir, addr string) {
	logger := klog.FromContext(ctx).WithValues("pf", addr)
	file := filepath.Join(dir, "sriov_numvfs")
	b, err := os.ReadFile(file)
	if err != nil {
		logger.Error(err, "Read sriov_numvfs")
		return
	}
	value := string(b)
	if value == "" {
		return // truncated by a write still under way; its data comes next
	}
	current, err := NumVFs(w.root, addr)
	if err != nil {
		logger.Error(err, "Read the PF")
		return
	}
	r := Result{PF: addr, Value: value, Requested: -1, NumVFs: current}
	n, perr := ParseNumVFs(value)
	switch {
	case perr != nil:
		r.Err = perr
	case n == current && value == fmt.Sprintf("%d\n", n):
		return // the current count, as the emulator writes it (its own write, too)
	default:
		r.Requested = n
		r.Err = SetNumVFs(w.root, addr, n)
	}
	if r.Err != nil {
		// A kernel fails the write(2); here the file is put back.
		if err := os.WriteFile(file, []byte(fmt.Sprintf("%d\n", current)), 0o644); err != nil {
			logger.Error(err, "Restore sriov_numvfs", "numVFs", current)
		}
		logger.Error(r.Err, "Refused a write to sriov_numvfs; restored the current count", "value", strings.TrimSpace(value), "numVFs", current)
	} else {
		r.NumVFs = n
		logger.Info("Set the PF's VFs", "value", strings.TrimSpace(value), "numVFs", n, "previous", current)
	}
	if w.results != nil {
		select {
		case w.results <- r:
		case <-ctx.Done():
		}
	}
}

// ParseNumVFs parses a value written to sriov_numvfs as the kernel does
// (kstrtou16 with base 0, one trailing newline allowed): decimal, 0x hex or
// 0-prefixed octal, up to 65535. Other values fail with EINVAL, as the
// kernel's write(2) does; too large ones with ERANGE.
func ParseNumVFs(value string) (int, error) {
	s := strings.TrimSuffix(value, "\n")
	base, digits := 10, s
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	if digits == "" || strings.ContainsAny(digits, "+-_ \t\n") {
		return 0, fmt.Errorf("sriov_numvfs: %q is not a number: %w", value, syscall.EINVAL)
	}
	n, err := strconv.ParseUint(digits, base, 16)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("sriov_numvfs: %q is more than 65535: %w", value, syscall.ERANGE)
	}
	if err != nil {
		return 0, fmt.Errorf("sriov_numvfs: %q is not a number: %w", value, syscall.EINVAL)
	}
	return int(n), nil
}
