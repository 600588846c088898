package cluster

import (
	"os"
	"path/filepath"
	"strings"
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
	if err := ensureLedger(ledgerFile, candidates); err != nil {
		t.Fatal(err)
	}
	// A second Up keeps the first ledger even though paths exist by now.
	os.MkdirAll(p("lib/kubelet/device-plugins"), 0o755)
	if err := ensureLedger(ledgerFile, candidates); err != nil {
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

	removed, err := removeLedgerPaths(ledgerFile)
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
	if removed, err := removeLedgerPaths(p("no-ledger.json")); err != nil || removed != nil {
		t.Errorf("missing ledger: %v, %v; want nothing to do", removed, err)
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
