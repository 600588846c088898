package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvmlstate"
)

// mount mounts source at target (fstype "" and unix.MS_BIND for a bind
// mount) and unmounts it when the test ends; it skips the test where this
// process may not mount.
func mount(t *testing.T, source, target, fstype string, flags uintptr, data string) {
	t.Helper()
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("mounting needs root (CAP_SYS_ADMIN): %v", err)
		}
		t.Fatalf("mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
}

// tmpfs mounts a tmpfs of size bytes on a new directory and returns it.
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	mount(t, "drakit-render-test", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size))
	return dir
}

// usedBytes is what the files on dir's filesystem take up.
func usedBytes(t *testing.T, dir string) int {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Blocks-st.Bfree) * int(st.Bsize)
}

// TestRerenderRefusesMountsBeforeDeleting mounts a tmpfs and, on the same
// filesystem, a bind mount of a directory outside the root below a rendered
// root: rendering again refuses, naming the mount point, and deletes
// nothing, neither in the root nor behind the bind mount.
func TestRerenderRefusesMountsBeforeDeleting(t *testing.T) {
	requireMknod(t)
	p := loadProfile(t, "dgx-h100")
	for _, tc := range []struct {
		name  string
		mount func(t *testing.T, target string)
	}{
		{"tmpfs", func(t *testing.T, target string) {
			mount(t, "drakit-render-test", target, "tmpfs", 0, "size=1m")
		}},
		{"bind mount on the same filesystem", func(t *testing.T, target string) {
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
			mount(t, outside, target, "", unix.MS_BIND, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := render(t, p, Options{ShimLibrary: fakeShim(t)})
			// run/ sorts after dev/ and proc/, which a render that
			// deletes as it goes would have removed by then.
			target := filepath.Join(root, "run", "mnt")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.mount(t, target)
			before := dumpTree(t, root)
			err := Render(context.Background(), p, Options{Root: root})
			if err == nil || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "mount point") {
				t.Fatalf("render over a mount point: %v; want an error naming the mount point %s", err, target)
			}
			if diff := cmp.Diff(before, dumpTree(t, root)); diff != "" {
				t.Errorf("the refused render changed the root:\n%s", diff)
			}
		})
	}
}

// TestRenderOntoMountPoint renders into a root that is itself a mount
// point, twice: the root's own mount is no reason to refuse.
func TestRenderOntoMountPoint(t *testing.T) {
	requireMknod(t)
	root := tmpfs(t, 64<<20)
	p := loadProfile(t, "testdata/profiles/snc.yaml")
	render(t, p, Options{Root: root})
	first := dumpTree(t, root)
	render(t, p, Options{Root: root})
	if diff := cmp.Diff(first, dumpTree(t, root)); diff != "" {
		t.Errorf("second render onto the mount point differs:\n%s", diff)
	}
}

// TestFailedRenderKeepsPreviousRoot fills a small filesystem: a render that
// runs out of space leaves the root it was rendering over exactly as it was,
// and a render into a new directory leaves nothing; the error names the root
// once, says what happened and what to do.
func TestFailedRenderKeepsPreviousRoot(t *testing.T) {
	requireMknod(t)
	small, large := loadProfile(t, "testdata/profiles/snc.yaml"), loadProfile(t, "dgx-h100")
	// Measure what a render of each profile takes, then give a filesystem
	// room for the small one but not for the large one.
	probe := tmpfs(t, 256<<20)
	render(t, small, Options{Root: filepath.Join(probe, "small")})
	smallBytes := usedBytes(t, probe)
	render(t, large, Options{Root: filepath.Join(probe, "large")})
	largeBytes := usedBytes(t, probe) - smallBytes
	if largeBytes <= smallBytes {
		t.Fatalf("dgx-h100 takes %d bytes, snc %d: the test needs the first to be larger", largeBytes, smallBytes)
	}
	fs := tmpfs(t, (smallBytes+largeBytes)/2)

	root := filepath.Join(fs, "root")
	render(t, small, Options{Root: root})
	before, used := dumpTree(t, root), usedBytes(t, fs)
	err := Render(context.Background(), large, Options{Root: root})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("render of dgx-h100 over snc on a full filesystem: %v, want ENOSPC", err)
	}
	msg := err.Error()
	if strings.Count(msg, root) != 1 || strings.Count(msg, "no space left on device") != 1 ||
		!strings.Contains(msg, "free space") || !strings.Contains(msg, "left as it was") {
		t.Errorf("error %q: want the root named once, the cause once, the fix, and that the root is unchanged", msg)
	}
	if diff := cmp.Diff(before, dumpTree(t, root)); diff != "" {
		t.Errorf("the failed render changed the previous root:\n%s", diff)
	}
	if _, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath)); err != nil {
		t.Errorf("state file of the previous root: %v", err)
	}

	fresh := filepath.Join(fs, "fresh")
	err = Render(context.Background(), large, Options{Root: fresh})
	if !errors.Is(err, syscall.ENOSPC) || strings.Count(err.Error(), fresh) != 1 || !strings.Contains(err.Error(), "no root is left") {
		t.Errorf("render into a new root on a full filesystem: %v; want ENOSPC naming %s once and saying no root is left", err, fresh)
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed render left %s behind: %v", fresh, err)
	}
	// Nothing the failed renders wrote is left anywhere.
	if after := usedBytes(t, fs); after != used {
		t.Errorf("the failed renders left %d bytes behind", after-used)
	}
}

// TestRenderAfterInterruptedRender: a render killed half-way leaves its
// staging directory in the root; the next render removes it and converges.
func TestRenderAfterInterruptedRender(t *testing.T) {
	requireMknod(t)
	p := loadProfile(t, "testdata/profiles/snc.yaml")
	root := render(t, p, Options{})
	want := dumpTree(t, root)
	for _, dir := range []string{stagingDir, previousDir} {
		if err := os.MkdirAll(filepath.Join(root, dir, "sys", "half"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	render(t, p, Options{Root: root})
	if diff := cmp.Diff(want, dumpTree(t, root)); diff != "" {
		t.Errorf("render after an interrupted one (-want +got):\n%s", diff)
	}
}

func TestRenderRefusesSymlinkRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	err := Render(context.Background(), loadProfile(t, "dgx-h100"), Options{Root: link})
	if !errors.Is(err, ErrNotOwned) || strings.Contains(err.Error(), "not a directory") ||
		!strings.Contains(err.Error(), "symbolic link to "+target) || !strings.Contains(err.Error(), "must be a real directory") {
		t.Errorf("render into a symlink: %v; want ErrNotOwned saying it is a symbolic link to %s and the root must be a real directory", err, target)
	}
	if entries, err := os.ReadDir(target); err != nil || len(entries) != 0 {
		t.Errorf("the link's target changed: %v, %v", entries, err)
	}
}
