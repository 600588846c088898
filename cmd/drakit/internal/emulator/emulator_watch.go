package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/internal/procstat"

	"drakit.dev/drakit/emulator/sriov"
)

// watcherStartTimeout bounds how long --detach waits for the watcher to
// record its PID, watcherStopTimeout how long --stop waits after SIGTERM
// before SIGKILL.
const (
	watcherStartTimeout = 15 * time.Second
	watcherStopTimeout  = 10 * time.Second
)

// watchConfig is what "drakit emulator watch" is told.
type watchConfig struct {
	root, pidFile, log string
	detach, stop       bool
}

// validate checks the flags' combinations.
func (w watchConfig) validate() error {
	switch {
	case w.detach && w.stop:
		return errors.New("--detach and --stop: give one")
	case (w.detach || w.stop) && w.pidFile == "":
		return errors.New("--pid-file: required with --detach and --stop")
	case w.detach && w.log == "":
		return errors.New("--log: required with --detach (the watcher's output goes there)")
	case !w.detach && w.log != "":
		return errors.New("--log: only with --detach")
	}
	return nil
}

// newEmulatorWatchCommand is "drakit emulator watch": sriov.Watch until
// interrupted, in the background with --detach, stopped with --stop.
func newEmulatorWatchCommand() *cobra.Command {
	var w watchConfig
	cmd := &cobra.Command{
		Use:   "watch --root DIR [--pid-file FILE [--detach --log FILE | --stop]]",
		Short: "Apply what drivers write into the SR-IOV PFs' sriov_numvfs files, until interrupted (needs root)",
		Long: `watch does for an emulated node what the kernel does on a write to
sriov_numvfs: a valid count makes the VFs appear (or 0 removes them); an
invalid one is refused and the file is put back to the current count (a real
kernel fails the write itself; a driver should write 0, wait until the
virtfn links are gone, write the new count, then wait until sriov_numvfs
reads it back and the virtfn links exist). A value written while no watcher
ran is applied at start. Each write handled prints one line; it runs until
SIGINT or SIGTERM.

With --pid-file the watcher writes its PID there once it watches, and
removes it when it stops. --detach starts the watcher in the background, in
a session of its own with its output in --log, and returns once it watches
(nothing when the PID file names a running watcher of --root); --stop stops
the watcher the PID file names (SIGTERM, SIGKILL after 10s) once its command
line shows it is a watcher of --root, and removes a PID file naming any
other process. drakit env up and down start and stop every node's watcher
this way.`,
		Example: `  drakit emulator watch --root /tmp/node &
  echo 4 > /tmp/node/sys/bus/pci/devices/0000:0c:00.0/sriov_numvfs
  drakit emulator watch --root /tmp/node --detach --pid-file /tmp/node.watch.pid --log /tmp/watch.log
  drakit emulator watch --root /tmp/node --stop --pid-file /tmp/node.watch.pid`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := w.validate(); err != nil {
				return err
			}
			if w.stop {
				return stopWatcher(c.Context(), w.pidFile, w.root, c.OutOrStdout())
			}
			if err := checkRoot(w.root); err != nil {
				return err
			}
			if w.detach {
				return startWatcher(c.Context(), w, c.OutOrStdout())
			}
			return runWatcher(c.Context(), w, c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&w.root, "root", "", "emulator root directory, rendered by 'drakit emulator render'")
	cmd.Flags().StringVar(&w.pidFile, "pid-file", "", "file the watcher writes its PID to while it watches")
	cmd.Flags().StringVar(&w.log, "log", "", "with --detach: file the watcher's output is appended to")
	cmd.Flags().BoolVar(&w.detach, "detach", false, "start the watcher in the background and return once it watches")
	cmd.Flags().BoolVar(&w.stop, "stop", false, "stop the watcher --pid-file names")
	return cmd
}

// runWatcher watches in the foreground until ctx ends, printing each write
// it handles; with a PID file it records itself there while it watches.
func runWatcher(ctx context.Context, w watchConfig, out io.Writer) error {
	results := make(chan sriov.Result)
	watcher, err := sriov.NewWatcher(w.root, results)
	if err != nil {
		return err
	}
	if w.pidFile != "" {
		pid := strconv.Itoa(os.Getpid())
		if err := writeFileAtomic(w.pidFile, []byte(pid+"\n")); err != nil {
			return fmt.Errorf("write PID file: %w", err)
		}
		defer func() {
			// Removed only while it still names this process.
			if b, err := os.ReadFile(w.pidFile); err == nil && strings.TrimSpace(string(b)) == pid {
				_ = os.Remove(w.pidFile)
			}
		}()
	}
	fmt.Fprintf(out, "watching %d SR-IOV PFs under %s\n", len(watcher.PFs()), w.root)
	done := make(chan error, 1)
	go func() { done <- watcher.Run(ctx) }()
	for {
		select {
		case err := <-done:
			return err
		case r := <-results:
			value := strings.TrimSpace(r.Value)
			if r.Err != nil {
				fmt.Fprintf(out, "PF %s: refused %q: %v; sriov_numvfs restored to %d\n", r.PF, value, r.Err, r.NumVFs)
			} else {
				fmt.Fprintf(out, "PF %s: %d VFs\n", r.PF, r.NumVFs)
			}
		}
	}
}

// writeFileAtomic writes data to path through a temporary file beside it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// startWatcher starts this binary's watcher of w.root in a session of its
// own, its output appended to w.log, and waits until it has recorded its
// PID (it watches) or has exited (its log's end is the error).
func startWatcher(ctx context.Context, w watchConfig, out io.Writer) error {
	if pid, ok := watcherPID(w.pidFile, w.root); ok {
		fmt.Fprintf(out, "watcher of %s already runs, PID %d\n", w.root, pid)
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(w.log), 0o755); err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	logf, err := os.OpenFile(w.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	defer logf.Close()
	// A descriptor this process inherited without close-on-exec (a
	// script's lock) would stay open in the watcher for as long as it
	// runs.
	closeInheritedOnExec()
	cmd := exec.Command(self, "emulator", "watch", "--root", w.root, "--pid-file", w.pidFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	want := strconv.Itoa(cmd.Process.Pid)
	deadline := time.NewTimer(watcherStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("start watcher of %s: it exited (%v): %s", w.root, err, logTail(w.log))
		case <-deadline.C:
			_ = cmd.Process.Kill()
			return fmt.Errorf("start watcher of %s: no PID in %s after %s: %s", w.root, w.pidFile, watcherStartTimeout, logTail(w.log))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return fmt.Errorf("start watcher of %s: %w", w.root, ctx.Err())
		case <-tick.C:
			if b, err := os.ReadFile(w.pidFile); err == nil && strings.TrimSpace(string(b)) == want {
				fmt.Fprintf(out, "watcher of %s started, PID %s, log %s\n", w.root, want, w.log)
				return nil
			}
		}
	}
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// logTail returns the last lines of a log, for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "; ")
}

// watcherPID returns the PID the PID file names when that process is a
// watcher of root (its command line "... emulator watch --root <root> ...").
func watcherPID(pidFile, root string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || procstat.Exited(pid) {
		return 0, false
	}
	return pid, isWatcherOf(bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}), root)
}

// isWatcherOf reports whether a command line is a watcher of root.
func isWatcherOf(argv [][]byte, root string) bool {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = string(a)
	}
	i := slices.Index(args, "emulator")
	if i < 0 || i+1 >= len(args) || args[i+1] != "watch" {
		return false
	}
	r := slices.Index(args, "--root")
	return r > i && r+1 < len(args) && args[r+1] == root
}

// stopWatcher stops the watcher of root the PID file names and removes the
// PID file; a PID file naming no watcher of root is removed, none is
// nothing to do.
func stopWatcher(ctx context.Context, pidFile, root string, out io.Writer) error {
	pid, ok := watcherPID(pidFile, root)
	if !ok {
		if err := os.Remove(pidFile); err == nil {
			fmt.Fprintf(out, "removed %s: it named no running watcher of %s\n", pidFile, root)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stop watcher: %w", err)
		}
		return nil
	}
	if err := unix.Kill(pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stop watcher PID %d: %w", pid, err)
	}
	deadline, killed := time.Now().Add(watcherStopTimeout), false
	for !procstat.Exited(pid) {
		if time.Now().After(deadline) {
			if killed {
				return fmt.Errorf("stop watcher PID %d: still there %s after SIGKILL", pid, watcherStopTimeout)
			}
			fmt.Fprintf(out, "watcher PID %d did not stop in %s: killing it\n", pid, watcherStopTimeout)
			_ = unix.Kill(pid, unix.SIGKILL)
			deadline, killed = time.Now().Add(watcherStopTimeout), true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop watcher PID %d: %w", pid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop watcher: %w", err)
	}
	fmt.Fprintf(out, "watcher of %s stopped (PID %d)\n", root, pid)
	return nil
}
