package faults

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLockWaitersSeesABlockedFlock blocks a second open file description on
// a held flock and checks that lockWaiters finds this process in the
// kernel's /proc/locks, and nothing for another inode.
func TestLockWaitersSeesABlockedFlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nvml.state.lock")
	holder, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	waiter, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	locked := make(chan error, 1)
	go func() { locked <- unix.Flock(int(waiter.Fd()), unix.LOCK_EX) }()

	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	major, minor := uint32(unix.Major(st.Dev)), uint32(unix.Minor(st.Dev))
	var got []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = lockWaiters("/proc/locks", major, minor, st.Ino); err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			break
		}
	}
	if !slices.Contains(got, os.Getpid()) {
		t.Errorf("lockWaiters = %v, want this process (%d) waiting", got, os.Getpid())
	}
	if other, _ := lockWaiters("/proc/locks", major, minor, st.Ino+1); len(other) != 0 {
		t.Errorf("lockWaiters of another inode = %v, want none", other)
	}
	holder.Close()
	if err := <-locked; err != nil {
		t.Errorf("waiter's flock after release: %v", err)
	}
}

func TestLockWaitersParsesTheKernelFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks")
	os.WriteFile(path, []byte(`1: FLOCK  ADVISORY  WRITE 100 00:2d:4242 0 EOF
1: -> FLOCK  ADVISORY  WRITE 200 00:2d:4242 0 EOF
1: -> FLOCK  ADVISORY  WRITE 300 00:2e:4242 0 EOF
2: POSIX  ADVISORY  WRITE 400 fd:01:4242 0 EOF
`), 0o644)
	got, err := lockWaiters(path, 0, 0x2d, 4242)
	if err != nil || !slices.Equal(got, []int{200}) {
		t.Errorf("lockWaiters = %v, %v; want [200] (the holder and other devices are not waiters)", got, err)
	}
}

func TestInPodCgroup(t *testing.T) {
	uid := "0d6c8c2e-1b7f-4a55-9f0e-6c3c1f2e9a10"
	for _, tc := range []struct {
		cgroup string
		want   bool
	}{
		{"12:cpu:/drakit-kubelet/kubepods/besteffort/pod" + uid + "/abc\n", true},
		{"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0d6c8c2e_1b7f_4a55_9f0e_6c3c1f2e9a10.slice/cri-containerd-abc.scope\n", true},
		{"12:cpu:/drakit-kubelet/kubepods/besteffort/pod" + uid + "0/abc\n", false},
		{"0::/user.slice\n", false},
	} {
		if got := inPodCgroup(tc.cgroup, uid); got != tc.want {
			t.Errorf("inPodCgroup(%q) = %v, want %v", tc.cgroup, got, tc.want)
		}
	}
}
