package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLedger checks that Down removes exactly the host paths that did not
// exist before the first Up.
func TestLedger(t *testing.T) {
	root := t.TempDir()
	p := func(rel string) string { return filepath.Join(root, rel) }
	candidates := []hostPathEntry{
		{p("lib/kubelet"), removeEmpty},
		{p("lib/kubelet/device-plugins"), removeTree},
		{p("lib/kubelet/device-plugins/kubelet.sock"), removeTree},
		{p("log/containers"), removeTree},
		{p("run/containerd"), removeEmpty},
		{p("run/containerd/s"), removeTree},
		{p("run/netns"), removeEmpty},
	}
	// Before Up: /run/containerd exists (a system containerd), with a file.
	os.MkdirAll(p("run/containerd"), 0o755)
	os.WriteFile(p("run/containerd/containerd.sock"), nil, 0o644)
	ledgerFile := p("ledger.json")
	if err := ensureLedger(ledgerFile, candidates, nil); err != nil {
		t.Fatal(err)
	}
	// A second Up keeps the first ledger even though paths exist by now.
	os.MkdirAll(p("lib/kubelet/device-plugins"), 0o755)
	if err := ensureLedger(ledgerFile, candidates, nil); err != nil {
		t.Fatal(err)
	}
	// What the cluster creates while it runs.
	os.WriteFile(p("lib/kubelet/device-plugins/kubelet.sock"), nil, 0o644)
	os.WriteFile(p("lib/kubelet/device-plugins/kubelet_internal_checkpoint"), nil, 0o644)
	os.MkdirAll(p("log/containers"), 0o755)
	os.Symlink("/nowhere", p("log/containers/pod.log"))
	os.MkdirAll(p("run/containerd/s"), 0o755)
	os.WriteFile(p("run/containerd/s/abc"), nil, 0o644)
	os.MkdirAll(p("run/netns"), 0o755)
	os.WriteFile(p("run/netns/cni-1"), nil, 0o644) // not ours to delete: the dir stays

	l, err := readLedger(ledgerFile)
	if err != nil {
		t.Fatal(err)
	}
	removed, err := removeLedgerPaths(l)
	if err == nil || !strings.Contains(err.Error(), "run/netns") || !strings.Contains(err.Error(), "cni-1") {
		t.Errorf("removeLedgerPaths error = %v, want one naming the non-empty run/netns", err)
	}
	want := []string{p("lib/kubelet/device-plugins/kubelet.sock"), p("lib/kubelet/device-plugins"), p("run/containerd/s"), p("lib/kubelet"), p("log/containers")}
	if diff := cmp.Diff(want, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, gone := range []string{"lib/kubelet", "log/containers", "run/containerd/s"} {
		if _, err := os.Lstat(p(gone)); !os.IsNotExist(err) {
			t.Errorf("%s still exists", gone)
		}
	}
	for _, kept := range []string{"run/containerd/containerd.sock", "run/netns/cni-1"} {
		if _, err := os.Lstat(p(kept)); err != nil {
			t.Errorf("%s was removed: it existed before Up or is not the cluster's", kept)
		}
	}
	l, err = readLedger(p("no-ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := removeLedgerPaths(l); err != nil || removed != nil {
		t.Errorf("missing ledger: %v, %v; want nothing to do", removed, err)
	}
}

// TestLedgerRefusesForeignCgroupRoot checks that the first Up of a run dir
// refuses a cgroupRoot that exists already (Down would kill its processes
// and remove it), and that the ledger then records nothing.
func TestLedgerRefusesForeignCgroupRoot(t *testing.T) {
	root := t.TempDir()
	taken := filepath.Join(root, "cpu", "system.slice")
	os.MkdirAll(taken, 0o755)
	ledgerFile := filepath.Join(root, "ledger.json")
	err := ensureLedger(ledgerFile, []hostPathEntry{{taken, removeCg}}, []string{taken})
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), taken) || !strings.Contains(err.Error(), "--cgroup-root") {
		t.Errorf("ensureLedger over an existing cgroup root = %v, want ErrNotOwned naming %s and --cgroup-root", err, taken)
	}
	if _, err := os.Stat(ledgerFile); !os.IsNotExist(err) {
		t.Errorf("ledger written although Up refused: %v", err)
	}
	free := filepath.Join(root, "cpu", "drakit-kubelet")
	if err := ensureLedger(ledgerFile, []hostPathEntry{{free, removeCg}}, []string{free}); err != nil {
		t.Fatalf("ensureLedger with a free cgroup root: %v", err)
	}
	l, err := readLedger(ledgerFile)
	if err != nil {
		t.Fatal(err)
	}
	if !l.records(free) || l.records(taken) {
		t.Errorf("ledger %+v: want %s recorded and %s not", l, free, taken)
	}
}

func TestCgroupTreeHelpers(t *testing.T) {
	root := t.TempDir()
	// A fake hierarchy: cgroup.procs files in plain directories.
	leaf := filepath.Join(root, "drakit-kubelet", "kubepods", "besteffort", "pod1")
	os.MkdirAll(leaf, 0o755)
	os.WriteFile(filepath.Join(root, "drakit-kubelet", "cgroup.procs"), []byte(""), 0o644)
	os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("12\n7\n"), 0o644)
	if diff := cmp.Diff([]int{7, 12}, pidsInCgroups([]string{filepath.Join(root, "drakit-kubelet")})); diff != "" {
		t.Errorf("pidsInCgroups (-want +got):\n%s", diff)
	}
	// rmdir fails on a directory with files, as on a cgroup with processes.
	err := removeCgroupTree(filepath.Join(root, "drakit-kubelet"))
	if err == nil || !strings.Contains(err.Error(), "processes: 12 7") {
		t.Errorf("removeCgroupTree with processes = %v", err)
	}
	os.Remove(filepath.Join(leaf, "cgroup.procs"))
	os.Remove(filepath.Join(root, "drakit-kubelet", "cgroup.procs"))
	if err := removeCgroupTree(filepath.Join(root, "drakit-kubelet")); err != nil {
		t.Fatalf("removeCgroupTree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "drakit-kubelet")); !os.IsNotExist(err) {
		t.Error("cgroup tree still exists")
	}
	if err := removeCgroupTree(filepath.Join(root, "absent")); err != nil {
		t.Errorf("removeCgroupTree of an absent cgroup = %v", err)
	}
}

// TestMountKubeletRoot checks the kubelet root dir's mount: its store in
// RunDir at the short KubeletRootDir, shared in a peer group of its own (a
// volume mounted below it does not show below the store's path), kept by a
// second Up, refused where something else is mounted or files would be
// hidden, and unmounted by Down's unmount step with what lies below it.
func TestMountKubeletRoot(t *testing.T) {
	needRoot(t)
	cfg := ownershipConfig(t)
	// RunDir on a shared mount, as on a systemd host, where a plain bind
	// mount of the store would join that mount's peer group.
	parent := filepath.Dir(cfg.RunDir)
	if err := syscall.Mount(parent, parent, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	if err := syscall.Mount("", parent, "", syscall.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := claimRunDir(cfg); err != nil {
		t.Fatal(err)
	}
	root, store := KubeletRootDir(cfg), kubeletRootStore(cfg)
	if mounted, err := mountKubeletRoot(cfg); err != nil || !mounted {
		t.Fatalf("mountKubeletRoot = %v, %v; want it mounted", mounted, err)
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := mountOf(mounts, root+"/plugins"); err != nil || m.MountPoint != root || !m.shared() || !sameDir(root, store) {
		t.Fatalf("mount of %s = %+v, %v; want a shared mount of %s", root, m, err, store)
	}
	if mounted, err := mountKubeletRoot(cfg); err != nil || mounted {
		t.Errorf("second mountKubeletRoot = %v, %v; want the mount kept", mounted, err)
	}
	// A volume the kubelet mounts: under the root dir, not under the store.
	volume := filepath.Join(root, "pods", "u", "volumes", "token")
	if err := os.MkdirAll(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", volume, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if mounts, _ = readMountInfo(mountInfoPath); len(mountsUnder(mounts, store)) != 0 {
		t.Errorf("mounts below the store %s: %v, want none (the root dir's peer group is its own)", store, mountsUnder(mounts, store))
	}

	// Another node whose mount point is taken, and one whose holds files.
	other := cfg
	other.Nodes = 3
	if err := os.MkdirAll(KubeletRootDir(other.node(2)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", KubeletRootDir(other.node(2)), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if _, err := mountKubeletRoot(other.node(2)); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "a tmpfs mount other than") {
		t.Errorf("mountKubeletRoot over a foreign mount = %v, want ErrNotOwned naming it", err)
	}
	if err := os.MkdirAll(filepath.Join(KubeletRootDir(other.node(3)), "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := mountKubeletRoot(other.node(3)); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "holds data") {
		t.Errorf("mountKubeletRoot over files = %v, want ErrNotOwned naming them", err)
	}
	if err := syscall.Unmount(KubeletRootDir(other.node(2)), 0); err != nil {
		t.Fatal(err)
	}

	if _, foreign, err := unmountOwn(cfg); err != nil || len(foreign) != 0 {
		t.Fatalf("unmountOwn = foreign %v, %v", foreign, err)
	}
	if mounts, _ = readMountInfo(mountInfoPath); len(mountsUnder(mounts, mountRoots(cfg)...)) != 0 {
		t.Errorf("still mounted after unmountOwn: %v", mountsUnder(mounts, mountRoots(cfg)...))
	}
}
