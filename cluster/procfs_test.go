package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantState byte
		wantStart uint64
		wantErr   bool
	}{
		{
			name:      "plain",
			in:        "1234 (etcd) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 12 0 987654 1000 100",
			wantState: 'S', wantStart: 987654,
		},
		{
			name:      "command name with spaces and parentheses",
			in:        "42 (a) b (c)) Z 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0 0",
			wantState: 'Z', wantStart: 5555,
		},
		{name: "truncated", in: "42 (x) S 1 2 3", wantErr: true},
		{name: "no name", in: "42 x S", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state, start, err := parseStat(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStat error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (state != tc.wantState || start != tc.wantStart) {
				t.Errorf("parseStat = %c %d, want %c %d", state, start, tc.wantState, tc.wantStart)
			}
		})
	}
}

func TestProcRefAndPIDFile(t *testing.T) {
	self, err := refOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !self.alive() {
		t.Fatal("own process is not alive")
	}
	path := filepath.Join(t.TempDir(), "x.pid")
	if err := writePIDFile(path, self); err != nil {
		t.Fatal(err)
	}
	got, err := readPIDFile(path)
	if err != nil || got != self {
		t.Fatalf("readPIDFile = %v, %v; want %v", got, err, self)
	}
	// Same PID, other start time: a reused PID is not the recorded process.
	if (procRef{PID: self.PID, Start: self.Start + 1}).alive() {
		t.Error("a ref with another start time counts as alive")
	}
	// An exited process is not alive.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if (procRef{PID: cmd.Process.Pid}).alive() {
		t.Error("exited process counts as alive")
	}
	if _, err := readPIDFile(filepath.Join(t.TempDir(), "none.pid")); !isNotExist(err) {
		t.Errorf("missing PID file: err %v, want not-exist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pid")
	os.WriteFile(bad, []byte("garbage\n"), 0o644)
	if _, err := readPIDFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad PID file: err %v, want one naming the file", err)
	}
}

const mountInfo = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 31 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
40 27 254:0 /r/kubelet/root /r/kubelet/root rw,relatime shared:2 - ext4 /dev/vda rw
41 40 0:40 / /r/kubelet/root/pods/u/volumes/kubernetes.io~projected/token rw shared:3 - tmpfs tmpfs rw
42 27 0:41 / /r/containerd/state/x/rootfs rw - overlay overlay rw
43 27 0:42 / /r-other/with\040space rw - tmpfs tmpfs rw
`

func TestParseMountInfo(t *testing.T) {
	mounts, err := parseMountInfo(strings.NewReader(mountInfo))
	if err != nil {
		t.Fatal(err)
	}
	var under []string
	for _, m := range mountsUnder(mounts, "/r") {
		under = append(under, m.MountPoint)
	}
	// Deepest first; /r-other is not under /r.
	want := []string{"/r/kubelet/root/pods/u/volumes/kubernetes.io~projected/token", "/r/containerd/state/x/rootfs", "/r/kubelet/root"}
	if diff := cmp.Diff(want, under); diff != "" {
		t.Errorf("mountsUnder(/r) (-want +got):\n%s", diff)
	}
	if got := mounts[len(mounts)-1].MountPoint; got != "/r-other/with space" {
		t.Errorf("escaped mount point = %q", got)
	}
	m, err := mountOf(mounts, "/r/kubelet/root/pods")
	if err != nil || m.MountPoint != "/r/kubelet/root" || !m.shared() {
		t.Errorf("mountOf(/r/kubelet/root/pods) = %+v, %v; want the shared /r/kubelet/root", m, err)
	}
	if m, _ := mountOf(mounts, "/sys/fs/cgroup/pids"); m.MountPoint != "/sys/fs/cgroup" || m.shared() {
		t.Errorf("mountOf(/sys/fs/cgroup/pids) = %+v", m)
	}
	v1, v2 := cgroupHierarchies(mounts)
	if diff := cmp.Diff([]string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory"}, v1); diff != "" || v2 != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroupHierarchies = %v, %q", v1, v2)
	}
	if _, err := parseMountInfo(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("parseMountInfo accepted a short line")
	}
}

func TestProcInfoOwnership(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	cfg.ComponentsDir = "/c"
	ownShim := "/c/containerd-v2.4.2/bin/containerd-shim-runc-v2"
	ownRoots := []string{"/sys/fs/cgroup/cpu/drakit-kubelet"}
	tests := []struct {
		name       string
		p          procInfo
		references bool
		owned      bool
		// foreignCgroup: the ledger does not record the cgroup root
		// as the cluster's (it existed before the first Up).
		foreignCgroup bool
	}{
		{
			name:       "our shim",
			p:          procInfo{Exe: ownShim, Cmdline: []string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-address", "/r/containerd/containerd.sock"}},
			references: true, owned: true,
		},
		{
			name:       "our shim after its binary was rebuilt",
			p:          procInfo{Exe: ownShim + " (deleted)", Cmdline: []string{"containerd-shim-runc-v2", "-address", "/r/containerd/containerd.sock"}},
			references: true, owned: true,
		},
		{
			name:       "a shim of a containerd whose socket is elsewhere below the run dir",
			p:          procInfo{Exe: ownShim, Cmdline: []string{"containerd-shim-runc-v2", "-address", "/r/other/containerd.sock"}},
			references: true,
		},
		{
			name:       "another binary naming our socket",
			p:          procInfo{Exe: "/usr/bin/containerd-shim-runc-v2", Cmdline: []string{"containerd-shim-runc-v2", "-address", "/r/containerd/containerd.sock"}},
			references: true,
		},
		{
			name:       "another containerd's shim",
			p:          procInfo{Exe: "/usr/bin/containerd-shim-runc-v2", Cmdline: []string{"containerd-shim-runc-v2", "-address", "/run/containerd/containerd.sock"}},
			references: false, owned: false,
		},
		{
			name:  "container in our cgroup",
			p:     procInfo{Exe: "/pause", Cgroups: []string{"/drakit-kubelet/kubepods/besteffort/pod1/c1"}},
			owned: true,
		},
		{
			name:          "container in a cgroup root the cluster did not create",
			p:             procInfo{Exe: "/pause", Cgroups: []string{"/drakit-kubelet/kubepods/besteffort/pod1/c1"}},
			foreignCgroup: true,
		},
		{
			name: "cgroup with a similar name",
			p:    procInfo{Exe: "/pause", Cgroups: []string{"/drakit-kubelet-other/x"}},
		},
		{
			name:       "a shell in the run dir is referenced, not owned",
			p:          procInfo{Exe: "/bin/bash", Cwd: "/r/logs"},
			references: true,
		},
		{
			name:       "flag naming the run dir",
			p:          procInfo{Exe: "/usr/bin/driver", Cmdline: []string{"driver", "--cdi-root=/r"}},
			references: true,
		},
		{
			name: "sibling dir",
			p:    procInfo{Exe: "/bin/x", Cmdline: []string{"x", "/r2/y"}, Cwd: "/r2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.references(cfg.RunDir); got != tc.references {
				t.Errorf("references = %v, want %v", got, tc.references)
			}
			roots := ownRoots
			if tc.foreignCgroup {
				roots = nil
			}
			if got := owned(cfg, roots, tc.p); got != tc.owned {
				t.Errorf("owned = %v, want %v", got, tc.owned)
			}
		})
	}
}

func TestTailFile(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 20000; i++ { // well over one 64 KiB read
		fmt.Fprintf(&b, "line %d\n", i)
	}
	big := filepath.Join(dir, "big.log")
	os.WriteFile(big, []byte(b.String()), 0o644)
	noNewline := filepath.Join(dir, "nonl.log")
	os.WriteFile(noNewline, []byte("a\nb\nc"), 0o644)
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, nil, 0o644)
	tests := []struct {
		path string
		n    int
		want string
	}{
		{big, 2, "line 19999\nline 20000\n"},
		{big, 1, "line 20000\n"},
		{noNewline, 2, "b\nc"},
		{noNewline, 0, "a\nb\nc"},
		{noNewline, 10, "a\nb\nc"},
		{empty, 5, ""},
	}
	for _, tc := range tests {
		got, err := tailFile(tc.path, tc.n)
		if err != nil || got != tc.want {
			t.Errorf("tailFile(%s, %d) = %q, %v; want %q", filepath.Base(tc.path), tc.n, got, err, tc.want)
		}
	}
	all, err := tailFile(big, 0)
	if err != nil || all != b.String() {
		t.Errorf("tailFile(big, 0) returned %d bytes, %v; want the whole %d", len(all), err, b.Len())
	}
}
