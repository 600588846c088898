package cluster

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// ownershipConfig is a configuration whose run dir and kubelet root base
// are fresh temporary directories and whose cgroup root and ports no
// cluster uses.
func ownershipConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RunDir = filepath.Join(shortTempDir(t), "run")
	cfg.KubeletRootBase = shortKubeletRootBase(t)
	cfg.ImagesDir = t.TempDir()
	cfg.CgroupRoot = "/drakit-ownership-test"
	cfg.APIServerPort = 16543
	cfg.StopTimeout = 2 * time.Second
	cfg.PodDeleteTimeout = time.Second
	return cfg
}

// shortTempDir is a temporary directory with a short path (t.TempDir's are
// too long for the run dir's unix sockets).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "drakit-own-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Unmount(dir, syscall.MNT_DETACH) // nothing is mounted there unless a test failed
		os.Chmod(filepath.Join(dir, "run"), 0o755)
		os.RemoveAll(dir)
	})
	return dir
}

// shortKubeletRootBase is a temporary kubelet root base short enough for
// per-pod DRA sockets of DriverNameReserve-byte driver names: /tmp/dkNNN.
func shortKubeletRootBase(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "dk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Nothing is mounted there unless a test failed.
		if mounts, err := readMountInfo(mountInfoPath); err == nil {
			for _, m := range mountsUnder(mounts, dir) {
				syscall.Unmount(m.MountPoint, syscall.MNT_DETACH)
			}
		}
		os.RemoveAll(dir)
	})
	return dir
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: Down refuses to run without it")
	}
}

// important creates a directory with a file in it, as a user's data, and
// returns a function that fails the test unless both are still there.
func important(t *testing.T, dir string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "important"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "important", "data")
	if err := os.WriteFile(data, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if b, err := os.ReadFile(data); err != nil || string(b) != "keep me" {
			t.Errorf("%s was touched: %q, %v", data, b, err)
		}
	}
}

// TestDownRefusesForeignRunDirs checks that Down acts on nothing it did not
// create: a run dir without the marker (the reported `cluster down --run-dir
// /tmp/v` that deleted /tmp/v), a symlink, a file, a copied run dir whose
// marker names another path, and a run dir others can write.
func TestDownRefusesForeignRunDirs(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name string
		// setup prepares cfg.RunDir, which holds important/data, and
		// returns what Down's error must say.
		setup func(t *testing.T, cfg Config) string
	}{
		{
			name:  "non-empty dir without marker",
			setup: func(*testing.T, Config) string { return "has no " + MarkerFile },
		},
		{
			name: "marker copied from another run dir",
			setup: func(t *testing.T, cfg Config) string {
				original := Config{RunDir: filepath.Join(t.TempDir(), "original")}
				os.MkdirAll(original.RunDir, 0o755)
				if _, err := writeMarker(original); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(markerPath(original))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(markerPath(cfg), b, 0o644)
				return "names run dir " + original.RunDir
			},
		},
		{
			name: "marker that is not one",
			setup: func(t *testing.T, cfg Config) string {
				os.WriteFile(markerPath(cfg), []byte("{}"), 0o644)
				return "is not a drakit cluster marker"
			},
		},
		{
			name: "writable by others",
			setup: func(t *testing.T, cfg Config) string {
				if _, err := writeMarker(cfg); err != nil {
					t.Fatal(err)
				}
				os.Chmod(cfg.RunDir, 0o777)
				return "others can write it"
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			cfg := ownershipConfig(t)
			check := important(t, cfg.RunDir)
			want := tc.setup(t, cfg)
			err := Down(ctx, cfg)
			if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), want) {
				t.Errorf("Down = %v, want ErrNotOwned saying %q", err, want)
			}
			check()
		})
	}

	t.Run("empty dir without marker", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		cfg := ownershipConfig(t)
		os.MkdirAll(cfg.RunDir, 0o755)
		if err := Down(ctx, cfg); !errors.Is(err, ErrNotOwned) {
			t.Errorf("Down = %v, want ErrNotOwned", err)
		}
		if _, err := os.Stat(cfg.RunDir); err != nil {
			t.Errorf("run dir gone after a refused Down: %v", err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		cfg := ownershipConfig(t)
		target := t.TempDir()
		check := important(t, target)
		if _, err := writeMarker(Config{RunDir: target}); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, cfg.RunDir); err != nil {
			t.Fatal(err)
		}
		err := Down(ctx, cfg)
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "is a symlink (to "+target+")") {
			t.Errorf("Down = %v, want ErrNotOwned naming the symlink's target", err)
		}
		check()
	})
	t.Run("file", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		cfg := ownershipConfig(t)
		os.WriteFile(cfg.RunDir, []byte("data"), 0o644)
		err := Down(ctx, cfg)
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "regular file, not a directory") {
			t.Errorf("Down = %v, want ErrNotOwned saying it is a file", err)
		}
		if b, _ := os.ReadFile(cfg.RunDir); string(b) != "data" {
			t.Errorf("file changed: %q", b)
		}
	})
	t.Run("absent", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		cfg := ownershipConfig(t)
		if err := Down(ctx, cfg); err != nil {
			t.Errorf("Down without a run dir = %v, want nothing to do", err)
		}
	})
}

// TestClaimRunDir checks which directories Up takes as its run dir: new and
// empty ones (marked), marked ones (kept); and that it refuses the rest before
// writing anything.
func TestClaimRunDir(t *testing.T) {
	cfg := ownershipConfig(t)
	m, err := claimRunDir(cfg)
	if err != nil {
		t.Fatalf("claim a new run dir: %v", err)
	}
	again, err := claimRunDir(cfg)
	if err != nil || again.ID != m.ID {
		t.Errorf("claim a marked run dir = %+v, %v; want the same identity %s", again, err, m.ID)
	}

	empty := ownershipConfig(t)
	os.MkdirAll(empty.RunDir, 0o700)
	if _, err := claimRunDir(empty); err != nil {
		t.Errorf("claim an empty run dir: %v", err)
	}

	foreign := ownershipConfig(t)
	check := important(t, foreign.RunDir)
	_, err = claimRunDir(foreign)
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "holds important") {
		t.Errorf("claim a non-empty dir = %v, want ErrNotOwned naming what it holds", err)
	}
	if _, err := os.Lstat(markerPath(foreign)); !os.IsNotExist(err) {
		t.Errorf("a refused claim wrote the marker: %v", err)
	}
	check()
}

// TestDownKeepsForeignMountsAndProcesses checks that Down on its own run dir
// unmounts what Up recorded, leaves a mount someone else made below the run
// dir (and the run dir with it), signals no process whose PID file start time
// does not match, and no process that merely works in the run dir.
func TestDownKeepsForeignMountsAndProcesses(t *testing.T) {
	needRoot(t)
	_, ctx := ktesting.NewTestContext(t)
	cfg := ownershipConfig(t)
	if _, err := claimRunDir(cfg); err != nil {
		t.Fatal(err)
	}
	// A mount Up made (recorded) and one a user made (not recorded).
	own := KubeletRootDir(cfg)
	foreign := filepath.Join(EmulatorRoot(cfg), "host-data")
	for _, d := range []string{own, foreign} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := recordMount(cfg, own); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{own, foreign} {
		if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("cannot mount tmpfs here: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(d, syscall.MNT_DETACH) })
	}
	os.WriteFile(filepath.Join(foreign, "data"), []byte("keep me"), 0o644)

	// A process whose PID file start time is off (its PID was reused), and
	// one working in the run dir.
	reused := startSleep(t, "")
	ref, err := refOf(reused.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ref.Start++
	os.MkdirAll(pidDir(cfg), 0o755)
	if err := writePIDFile(pidPath(cfg, Etcd), ref); err != nil {
		t.Fatal(err)
	}
	worker := startSleep(t, cfg.RunDir)

	err = Down(ctx, cfg)
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), foreign) {
		t.Errorf("Down = %v, want ErrNotOwned naming the foreign mount %s", err, foreign)
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, m := range mountsUnder(mounts, cfg.RunDir) {
		left = append(left, m.MountPoint)
	}
	if len(left) != 1 || left[0] != foreign {
		t.Errorf("mounts under the run dir after Down: %v, want only the foreign %s", left, foreign)
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "data")); err != nil || string(b) != "keep me" {
		t.Errorf("foreign mount's data: %q, %v", b, err)
	}
	for name, p := range map[string]*exec.Cmd{"reused PID": reused, "worker in the run dir": worker} {
		if err := p.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("%s (pid %d) was signalled by Down: %v", name, p.Process.Pid, err)
		}
	}
}

// startSleep starts a sleep in dir (the test's when empty) that the test
// stops at its end.
func startSleep(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}
