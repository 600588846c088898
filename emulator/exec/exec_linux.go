package exec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// ErrNotPermitted is returned when the mount namespace cannot be set up for
// want of privilege: Run needs root (CAP_SYS_ADMIN).
var ErrNotPermitted = errors.New("emulator exec needs root (CAP_SYS_ADMIN) to create a mount namespace")

// Run runs command in a new private mount namespace in which cfg.Root
// is laid over the host's paths (see the package documentation), and
// returns when the command has exited: nil for status 0, an error wrapping
// the command's *os/exec.ExitError otherwise. Canceling ctx sends the
// command SIGTERM, and SIGKILL 10 s later.
func Run(ctx context.Context, cfg Config, command Command) error {
	cfg.Default()
	if err := errors.Join(cfg.Validate(), command.Validate()); err != nil {
		return err
	}
	plan, err := NewPlan(cfg)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Emulator exec mount plan", "root", plan.Root, "plan", plan.String())
	errc := make(chan error, 1)
	onOwnThread(func() { errc <- plan.run(ctx, command) })
	return <-errc
}

// onOwnThread runs f on an OS thread of its own that ends with f, so that
// the mount namespace f unshares never reaches another goroutine. The
// process's main thread is avoided: it cannot end, and /proc/self shows its
// namespace.
func onOwnThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// On the main thread: hold it, so that the new goroutine
			// cannot be scheduled onto it, then give it back.
			onOwnThread(f)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		f()
		close(done)
		// Returning without UnlockOSThread ends the thread, and the
		// namespace with it (the command keeps its own reference).
	}()
	<-done
}

// run must be called on a locked thread of its own: it unshares the
// thread's mount namespace, applies the plan, and runs the command.
func (p *Plan) run(ctx context.Context, command Command) error {
	wd, err := os.Getwd()
	if err != nil {
		wd = "/"
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%w: unshare: %v", ErrNotPermitted, err)
		}
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	// From here on every mount is private to this thread's new namespace:
	// slave, so that nothing propagates back to the host (host mounts still
	// propagate in).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make the mount namespace a slave of the host's: %w", err)
	}
	staging, err := os.MkdirTemp("", "drakit-emulator-exec-")
	if err != nil {
		return fmt.Errorf("create a staging directory: %w", err)
	}
	err = p.apply(staging)
	if rerr := os.Remove(staging); rerr != nil && err == nil {
		err = fmt.Errorf("remove staging directory: %w", rerr)
	}
	if err != nil {
		return err
	}
	// The working directory may lie below a shadowed directory: enter it
	// again through the new mounts (this thread's alone, as unshare gave it
	// its own filesystem context).
	if unix.Chdir(wd) != nil {
		_ = unix.Chdir("/")
	}
	return newCmd(ctx, command, p.Root).Run()
}

// newCmd builds the command to run, looked up in $PATH inside the
// namespace, with RootEnv set.
func newCmd(ctx context.Context, c Command, root string) *osexec.Cmd {
	cmd := osexec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if !strings.HasPrefix(kv, RootEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, RootEnv+"="+root)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// apply mounts the plan in the current (new) namespace. Staging directories
// are created in staging and removed again; the only changes outside the
// namespace are those directories, empty again when apply returns.
func (p *Plan) apply(staging string) error {
	devs := map[string]uint64{} // shadow directory -> its tmpfs's device
	for i, s := range p.Shadows {
		dev, err := s.apply(filepath.Join(staging, strconv.Itoa(i)))
		if err != nil {
			return err
		}
		devs[s.Dir] = dev
	}
	for _, m := range p.Mounts {
		if err := m.apply(devs); err != nil {
			return err
		}
	}
	return nil
}

func statDev(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Dev, nil
}

// apply lays a tmpfs over s.Dir holding s's entries: the real ones bound
// back (symbolic links copied), hidden and replaced ones left out. The
// tmpfs is built on stage and moved over s.Dir; stage is removed. It
// returns the tmpfs's device number.
func (s Shadow) apply(stage string) (dev uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(s.Dir, &st); err != nil {
		return 0, fmt.Errorf("shadow %s: %w", s.Dir, err)
	}
	if err := os.Mkdir(stage, 0o700); err != nil {
		return 0, fmt.Errorf("shadow %s: %w", s.Dir, err)
	}
	mounted := false
	defer func() {
		if err != nil && mounted {
			_ = unix.Unmount(stage, unix.MNT_DETACH)
		}
		// Only ever rmdir: a failed stage may still hold bind mounts of
		// real directories, which a recursive removal would empty.
		if rerr := os.Remove(stage); rerr != nil && err == nil {
			err = fmt.Errorf("shadow %s: remove stage: %w", s.Dir, rerr)
		}
	}()
	opts := fmt.Sprintf("mode=%o,uid=%d,gid=%d", st.Mode&0o7777, st.Uid, st.Gid)
	if err := unix.Mount("tmpfs", stage, "tmpfs", 0, opts); err != nil {
		return 0, fmt.Errorf("shadow %s: mount tmpfs: %w", s.Dir, err)
	}
	mounted = true
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return 0, fmt.Errorf("shadow %s: %w", s.Dir, err)
	}
	for _, e := range entries {
		if !s.keeps(e.Name()) {
			continue
		}
		if err := keep(filepath.Join(s.Dir, e.Name()), filepath.Join(stage, e.Name())); err != nil {
			return 0, fmt.Errorf("shadow %s: %w", s.Dir, err)
		}
	}
	if err := unix.Mount(stage, s.Dir, "", unix.MS_MOVE, ""); err != nil {
		return 0, fmt.Errorf("shadow %s: move tmpfs over it: %w", s.Dir, err)
	}
	mounted = false
	if dev, err = statDev(s.Dir); err != nil {
		return 0, fmt.Errorf("shadow %s: %w", s.Dir, err)
	}
	return dev, nil
}

// keep makes the real entry src appear at dst in a shadow's tmpfs.
func keep(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone since the directory was read
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		return os.Lchown(dst, int(st.Uid), int(st.Gid))
	case fi.IsDir():
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return nil
}

// apply creates m's target when it is missing, only ever inside a shadow's
// tmpfs, and mounts m there.
func (m Mount) apply(devs map[string]uint64) error {
	_, err := os.Lstat(m.Target)
	switch {
	case m.Link != "" || errors.Is(err, fs.ErrNotExist):
		if err := createInShadow(m, devs); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("mount %s: %w", m, err)
	}
	if m.Link != "" {
		return nil
	}
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mount %s: %w", m, err)
	}
	return nil
}

// createInShadow creates m's target (directory, empty file or link) and the
// directories above it that are missing. It refuses unless the nearest
// existing directory above is on the tmpfs of a shadow, so that nothing is
// ever created on the host.
func createInShadow(m Mount, devs map[string]uint64) error {
	existing := filepath.Dir(m.Target)
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		existing = filepath.Dir(existing)
	}
	dev, err := statDev(existing)
	if err != nil {
		return fmt.Errorf("create %s: %w", m.Target, err)
	}
	inShadow := false
	for dir, d := range devs {
		if d == dev && (existing == dir || strings.HasPrefix(existing, dir+"/")) {
			inShadow = true
		}
	}
	if !inShadow {
		return fmt.Errorf("create %s: refusing to create it on the host (%s is not a shadowed directory)", m.Target, existing)
	}
	if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", m.Target, err)
	}
	switch {
	case m.Link != "":
		err = os.Symlink(m.Link, m.Target)
	case m.Dir:
		err = os.Mkdir(m.Target, 0o755)
	default:
		var f *os.File
		if f, err = os.OpenFile(m.Target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", m.Target, err)
	}
	return nil
}
