package emulator

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/internal/procstat"
)

func TestWatchFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--root /r --detach --stop --pid-file /p": "--detach and --stop: give one",
		"--root /r --detach --log /l":             "--pid-file: required with --detach and --stop",
		"--root /r --stop":                        "--pid-file: required",
		"--root /r --detach --pid-file /p":        "--log: required with --detach",
		"--root /r --log /l":                      "--log: only with --detach",
	} {
		cmd := newEmulatorWatchCommand()
		cmd.SetArgs(strings.Fields(args))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("watch %s: %v, want %q", args, err, want)
		}
	}
}

func TestIsWatcherOf(t *testing.T) {
	argv := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	for cmdline, want := range map[string]bool{
		"/usr/bin/drakit emulator watch --root /r --pid-file /p": true,
		"/usr/bin/drakit emulator watch --root /r2":              false,
		"/usr/bin/drakit emulator render --root /r":              false,
		"/usr/bin/sleep 100":                                     false,
		"/usr/bin/drakit emulator watch":                         false,
	} {
		if got := isWatcherOf(argv(cmdline), "/r"); got != want {
			t.Errorf("isWatcherOf(%q, /r) = %t, want %t", cmdline, got, want)
		}
	}
}

// TestStopWatcher: --stop signals the process its PID file names only when
// its command line is a watcher of the root, and removes the PID file.
func TestStopWatcher(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "emulator.watch.pid")
	// A shell whose command line reads "... emulator watch --root <dir>".
	watcher := exec.Command("sh", "-c", "sleep 30; true", "emulator", "watch", "--root", dir)
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	defer watcher.Process.Kill()
	done := make(chan struct{})
	go func() { _ = watcher.Wait(); close(done) }()
	write := func(pid int) {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A PID file of another root's watcher: removed, the process left.
	write(watcher.Process.Pid)
	var out bytes.Buffer
	if err := stopWatcher(ctx, pidFile, filepath.Join(dir, "other"), &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("PID file of no watcher of the root still there (%v)", err)
	}
	if procstat.Exited(watcher.Process.Pid) {
		t.Fatal("stopped a process that is no watcher of the root")
	}

	write(watcher.Process.Pid)
	if err := stopWatcher(ctx, pidFile, dir, &out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("PID file still there after the stop (%v)", err)
	}
	if !strings.Contains(out.String(), "stopped (PID "+strconv.Itoa(watcher.Process.Pid)+")") {
		t.Errorf("output %q does not say it stopped the watcher", out.String())
	}
	// No PID file: nothing to do.
	if err := stopWatcher(ctx, pidFile, dir, &out); err != nil {
		t.Errorf("without a PID file: %v", err)
	}
}
