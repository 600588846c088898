package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrComponentExited is wrapped when a component exits while Up waits for it.
var ErrComponentExited = errors.New("component exited")

// process is a component's process: one Up started (a child, whose exit it
// sees at once) or one an earlier Up left running.
type process struct {
	name string
	ref  procRef
	// done is closed when a child started by this process exits; nil for
	// a process found running.
	done chan struct{}
	// waitErr is the child's exit status, valid once done is closed.
	waitErr error
}

// exited reports whether the process is gone, with its exit status when it
// was a child.
func (p *process) exited() (bool, error) {
	if p.done != nil {
		select {
		case <-p.done:
			return true, p.waitErr
		default:
			return false, nil
		}
	}
	return !p.ref.alive(), nil
}

// hostPath is the PATH every component gets: the component binaries first
// (containerd finds its shim through PATH), then the system directories that
// hold runc, mount and unshare.
func hostPath(cfg Config) string {
	var dirs []string
	for _, b := range []string{"containerd", "kubelet"} {
		if p, err := BinaryPath(cfg, b); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	return strings.Join(append(dirs, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"), ":")
}

// childEnv is the environment of every component: the caller's, less proxy
// settings (no component may send traffic anywhere but 127.0.0.1, and a
// proxy would take loopback traffic off the host) and NOTIFY_SOCKET, with
// PATH from hostPath.
func childEnv(cfg Config) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NOTIFY_SOCKET", "PATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+hostPath(cfg))
}

// lookPath finds a program in hostPath.
func lookPath(cfg Config, name string) (string, error) {
	for _, dir := range filepath.SplitList(hostPath(cfg)) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s", name, hostPath(cfg))
}

// startProcess starts argv as a daemon in its own session (so that signals
// to the caller's process group, e.g. from GNU timeout, do not reach it),
// with stdin from /dev/null, output appended to the component's log, the
// working directory RunDir, and records it in the component's PID file.
func startProcess(cfg Config, name string, argv []string) (*process, error) {
	if err := os.MkdirAll(logDir(cfg), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.OpenFile(LogPath(cfg, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== drakit %s: starting %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = cfg.RunDir
	cmd.Env = childEnv(cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	ref, err := refOf(cmd.Process.Pid)
	if err != nil {
		<-p.done // it is already gone; report how it ended
		return nil, fmt.Errorf("start %s: %w: %v%s", name, ErrComponentExited, p.waitErr, logTail(cfg, name))
	}
	p.ref = ref
	if err := os.MkdirAll(pidDir(cfg), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := writePIDFile(pidPath(cfg, name), ref); err != nil {
		return nil, fmt.Errorf("start %s: record PID: %w", name, err)
	}
	return p, nil
}

// runningProcess returns the component's process when its PID file names a
// live process, or nil.
func runningProcess(cfg Config, name string) (*process, error) {
	ref, err := readPIDFile(pidPath(cfg, name))
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !ref.alive() {
		return nil, nil
	}
	return &process{name: name, ref: ref}, nil
}

// stopProcess sends SIGTERM, waits up to timeout for the process to exit and
// then sends SIGKILL. It never signals a PID whose start time has changed.
func stopProcess(ctx context.Context, ref procRef, timeout time.Duration) error {
	if !ref.alive() {
		return nil
	}
	if err := syscall.Kill(ref.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process %d: %w", ref.PID, err)
	}
	if waitGone(ctx, ref, timeout) {
		return nil
	}
	if ref.alive() {
		if err := syscall.Kill(ref.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill process %d: %w", ref.PID, err)
		}
	}
	if waitGone(ctx, ref, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("process %d survived SIGKILL for 10s", ref.PID)
}

// waitGone polls until the process is gone or timeout passes.
func waitGone(ctx context.Context, ref procRef, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for ref.alive() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return !ref.alive()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// logTailLines is how much of a component's log an error quotes.
const logTailLines = 25

// logTail returns the last lines of a component's log, formatted for an
// error message, or "" when there is no log.
func logTail(cfg Config, name string) string {
	tail, err := tailFile(LogPath(cfg, name), logTailLines)
	if err != nil || tail == "" {
		return ""
	}
	return fmt.Sprintf("\nlast %d lines of %s:\n%s", logTailLines, LogPath(cfg, name), tail)
}

// tailFile returns the last n lines of a file (n <= 0: all of it).
func tailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	const chunk = 64 * 1024
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	var buf []byte
	for off := size; ; {
		if n > 0 && bytes.Count(buf, []byte("\n")) > n || off == 0 {
			break
		}
		step := int64(chunk)
		if off < step {
			step = off
		}
		off -= step
		part := make([]byte, step)
		if _, err := f.ReadAt(part, off); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		buf = append(part, buf...)
	}
	lines := strings.SplitAfter(string(buf), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, ""), nil
}
