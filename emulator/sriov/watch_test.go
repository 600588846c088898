package sriov_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/emulator/sriov"
)

// next waits, bounded, for the watcher's next result.
func next(t *testing.T, results <-chan sriov.Result) sriov.Result {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher handled no write within 20s")
		return sriov.Result{}
	}
}

func TestWatchAppliesAndRestores(t *testing.T) {
	t.Parallel()
	root := renderNode(t)
	numvfs := filepath.Join(root, "sys/bus/pci/devices", cx7, "sriov_numvfs")
	// A value written while no watcher runs is applied when it starts.
	if err := os.WriteFile(filepath.Join(root, "sys/bus/pci/devices", cx7b, "sriov_numvfs"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results := make(chan sriov.Result)
	w, err := sriov.NewWatcher(root, results)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(w.PFs()); got != 3 {
		t.Errorf("watching %d PFs, want 3 (two ConnectX-7, one E810-C)", got)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if r := next(t, results); r.PF != cx7b || r.Err != nil || r.NumVFs != 2 {
		t.Fatalf("pending value at start: %+v", r)
	}

	write := func(value string) sriov.Result {
		t.Helper()
		if err := os.WriteFile(numvfs, []byte(value), 0o644); err != nil {
			t.Fatal(err)
		}
		return next(t, results)
	}
	// A valid write makes the VFs appear, as a driver expects them: the
	// count reads back and the virtfn links exist.
	if r := write("3\n"); r.Err != nil || r.NumVFs != 3 || r.PF != cx7 {
		t.Fatalf("write 3: %+v", r)
	}
	if got := read(t, numvfs); got != "3" {
		t.Errorf("sriov_numvfs reads %q after 3", got)
	}
	if vfs := readVFs(t, root, cx7); len(vfs) != 3 {
		t.Errorf("%d VFs after writing 3", len(vfs))
	}
	// Invalid writes are refused and the file is restored to the count.
	for _, tc := range []struct {
		value string
		want  error
	}{{"5\n", syscall.EBUSY}, {"17\n", syscall.ERANGE}, {"three\n", syscall.EINVAL}} {
		r := write(tc.value)
		if !errors.Is(r.Err, tc.want) || r.NumVFs != 3 {
			t.Errorf("write %q: %+v, want %v", tc.value, r, tc.want)
		}
		if got := read(t, numvfs); got != "3" {
			t.Errorf("after the refused write %q sriov_numvfs reads %q, want 3", tc.value, got)
		}
	}
	if vfs := readVFs(t, root, cx7); len(vfs) != 3 {
		t.Errorf("%d VFs after refused writes, want 3", len(vfs))
	}
	// 0 removes them; then another count is allowed.
	if r := write("0"); r.Err != nil || r.NumVFs != 0 {
		t.Fatalf("write 0: %+v", r)
	}
	if vfs := readVFs(t, root, cx7); len(vfs) != 0 {
		t.Errorf("%d VFs after writing 0", len(vfs))
	}
	if r := write("0x10\n"); r.Err != nil || r.NumVFs != 16 {
		t.Fatalf("write 0x10: %+v", r)
	}
	if got := read(t, numvfs); got != "16" {
		t.Errorf("sriov_numvfs reads %q after 0x10", got)
	}
}
