package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// mountInfoPath is the calling process's mount table.
const mountInfoPath = "/proc/self/mountinfo"

// cgroupHierarchies returns the mount points of the cgroup v1 hierarchies and
// of the cgroup v2 hierarchy (empty where there is none).
func cgroupHierarchies(mounts []mountEntry) (v1 []string, v2 string) {
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup":
			v1 = append(v1, m.MountPoint)
		case "cgroup2":
			v2 = m.MountPoint
		}
	}
	sort.Strings(v1)
	return v1, v2
}

// ensureCgroupRoot creates the kubelet's cgroupRoot: in every v1 hierarchy
// when the host uses v1 (hybrid included; the v2 part of a hybrid host gets
// nothing), else in the v2 hierarchy. In the cpuset hierarchy it copies
// cpuset.cpus and cpuset.mems from the parent, which a new v1 cpuset lacks.
func ensureCgroupRoot(cfg Config, mounts []mountEntry) error {
	v1, v2 := cgroupHierarchies(mounts)
	dirs := v1
	if len(v1) == 0 {
		if v2 == "" {
			return errors.New("create cgroups: no cgroup hierarchy is mounted")
		}
		dirs = []string{v2}
	}
	for _, h := range dirs {
		dir := filepath.Join(h, cgroupRoot(cfg))
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			own, err := os.ReadFile(filepath.Join(dir, f))
			if err == nil && strings.TrimSpace(string(own)) != "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("set %s/%s: %w", dir, f, err)
			}
		}
	}
	return nil
}

// cgroupRootDirs returns every node's cgroupRoot in every hierarchy (v1
// and v2), whether or not it exists; of a config narrowed to a node, only
// that node's.
func cgroupRootDirs(cfg Config, mounts []mountEntry) []string {
	v1, v2 := cgroupHierarchies(mounts)
	if v2 != "" {
		v1 = append(v1, v2)
	}
	nodes := cfg.nodes()
	if cfg.nodeIndex != 0 {
		nodes = []Config{cfg}
	}
	var dirs []string
	for _, n := range nodes {
		for _, h := range v1 {
			dirs = append(dirs, filepath.Join(h, cgroupRoot(n)))
		}
	}
	return dirs
}

// ownCgroupRoots returns the nodes' cgroupRoot dirs that exist and that
// the host path ledger records as created by the cluster: only processes in
// these are the cluster's containers, and only these are removed.
func ownCgroupRoots(cfg Config, l ledger, mounts []mountEntry) []string {
	var dirs []string
	for _, dir := range cgroupRootDirs(cfg, mounts) {
		if !l.records(dir) {
			continue
		}
		if _, err := os.Stat(dir); err == nil {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// removeCgroupTree removes a cgroup and all its descendants, deepest first.
// A cgroup that still has processes cannot be removed; the error says which
// processes are left.
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		return fmt.Errorf("remove cgroup %s: %w (processes: %s)", dir, err, strings.Join(strings.Fields(string(procs)), " "))
	}
	return nil
}

// mountKubeletRoot mounts a node's kubelet root dir: its store in RunDir
// bind-mounted at the short KubeletRootDir, so that the sockets DRA drivers
// create below it fit the unix socket limit (Config.KubeletRootBase). It is
// a real mount point, not a symlink: the kubelet uses --root-dir as given
// and matches the paths below it against the mount table
// (hostutil.MakeRShared, mount-utils), which holds resolved paths only.
// The mount is shared, in a peer group of its own: the kubelet runs in its
// own mount namespace (for the sysctl files), and the tmpfs volumes it
// mounts there (service account tokens, secrets) reach the host namespace,
// where containerd bind-mounts them into containers, only through a shared
// mount; a group of its own keeps them from propagating to the store's path
// through the mount RunDir is on. A mount point that shows the store already
// is the cluster's (an earlier Up); anything else mounted there, or a
// directory with files, is refused. It reports whether it mounted.
func mountKubeletRoot(cfg Config) (bool, error) {
	store, root := kubeletRootStore(cfg), KubeletRootDir(cfg)
	if err := os.MkdirAll(store, 0o750); err != nil {
		return false, fmt.Errorf("create kubelet root dir store: %w", err)
	}
	for _, dir := range []string{cfg.KubeletRootBase, root} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return false, fmt.Errorf("create kubelet root dir mount point: %w", err)
		}
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return false, fmt.Errorf("kubelet root dir %s: %w: not a directory (%v)", root, ErrNotOwned, err)
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		return false, err
	}
	m, err := mountOf(mounts, root)
	if err != nil {
		return false, err
	}
	if m.MountPoint == root {
		if !sameDir(root, store) {
			return false, fmt.Errorf("kubelet root dir %s: %w: a %s mount other than %s is there (another cluster's? run its `drakit env down`), "+
				"or choose another --kubelet-root-base", root, ErrNotOwned, m.FSType, store)
		}
		if m.shared() {
			return false, nil
		}
	} else {
		entries, err := os.ReadDir(root)
		if err != nil {
			return false, fmt.Errorf("read kubelet root dir %s: %w", root, err)
		}
		if len(entries) > 0 {
			return false, fmt.Errorf("kubelet root dir %s: %w: it holds %s, which the mount would hide; choose another --kubelet-root-base",
				root, ErrNotOwned, entryNames(entries, 3))
		}
		if err := recordMount(cfg, root); err != nil {
			return false, err
		}
		if err := syscall.Mount(store, root, "", syscall.MS_BIND, ""); err != nil {
			return false, fmt.Errorf("bind-mount kubelet root dir %s at %s: %w", store, root, err)
		}
		if err := syscall.Mount("", root, "", syscall.MS_PRIVATE, ""); err != nil {
			return false, fmt.Errorf("make kubelet root dir %s private: %w", root, err)
		}
	}
	if err := syscall.Mount("", root, "", syscall.MS_SHARED, ""); err != nil {
		return false, fmt.Errorf("make kubelet root dir %s shared: %w", root, err)
	}
	return true, nil
}

// sameDir reports whether paths a and b are the same directory (a bind
// mount shows its source's inode).
func sameDir(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// unmountOwn unmounts, deepest first, the mounts below RunDir that are the
// cluster's (ownMounts), and returns how many it unmounted and the foreign
// mounts it left alone. A busy mount is detached lazily: by then every
// process of the cluster has been stopped.
func unmountOwn(cfg Config) (int, []mountEntry, error) {
	l, err := readMountLedger(cfg)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	// A mount can hide others below it; unmount until nothing is left,
	// with a bound in case a mount cannot be removed at all.
	for round := 0; ; round++ {
		mounts, err := readMountInfo(mountInfoPath)
		if err != nil {
			return n, nil, err
		}
		own, foreign := ownMounts(cfg, l, mounts)
		if len(own) == 0 {
			return n, foreign, nil
		}
		if round == 8 {
			return n, foreign, fmt.Errorf("unmount under %s: %s is still mounted", cfg.RunDir, own[0].MountPoint)
		}
		for _, m := range own {
			err := syscall.Unmount(m.MountPoint, 0)
			if errors.Is(err, syscall.EBUSY) {
				err = syscall.Unmount(m.MountPoint, syscall.MNT_DETACH)
			}
			if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				return n, foreign, fmt.Errorf("unmount %s: %w", m.MountPoint, err)
			}
			if err == nil {
				n++
			}
		}
	}
}

// Host path removal kinds.
const (
	removeTree  = "tree"      // remove the path and everything below it
	removeEmpty = "empty-dir" // remove the directory only if it is empty
	removeCg    = "cgroup"    // remove the cgroup tree depth-first
)

// hostPathEntry is a path outside RunDir the cluster may create.
type hostPathEntry struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// hostPathCandidates lists the paths outside RunDir that the kubelet, the
// runc shim or containerd create at fixed places (§17, §18.6), containerd's
// k8s.io cgroup, every kubelet's cgroupRoot in every hierarchy, and
// KubeletRootBase with the kubelet root dirs' mount points that Up makes.
func hostPathCandidates(cfg Config, mounts []mountEntry) []hostPathEntry {
	entries := []hostPathEntry{
		{"/var/lib/kubelet", removeEmpty},
		{"/var/lib/kubelet/device-plugins", removeTree},
		{"/var/lib/kubelet/device-plugins/kubelet.sock", removeTree},
		{"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", removeTree},
		{"/var/log/containers", removeTree},
		{"/run/containerd", removeEmpty},
		{"/run/containerd/runc", removeEmpty},
		{"/run/containerd/runc/k8s.io", removeTree},
		{"/run/containerd/s", removeTree},
		{"/run/netns", removeEmpty},
		{"/run/nri", removeEmpty},
		{"/etc/cni/net.d", removeEmpty},
		{"/etc/cni", removeEmpty},
		{"/usr/libexec/kubernetes", removeTree},
		{"/run/kubernetes", removeEmpty},
		{cfg.KubeletRootBase, removeEmpty},
	}
	for _, n := range cfg.nodes() {
		entries = append(entries, hostPathEntry{KubeletRootDir(n), removeEmpty})
	}
	v1, v2 := cgroupHierarchies(mounts)
	if v2 != "" {
		v1 = append(v1, v2)
	}
	for _, h := range v1 {
		entries = append(entries, hostPathEntry{filepath.Join(h, "k8s.io"), removeCg})
	}
	for _, dir := range cgroupRootDirs(cfg, mounts) {
		entries = append(entries, hostPathEntry{dir, removeCg})
	}
	return entries
}

// ledger lists the host paths that did not exist when the cluster was first
// brought up, the only ones Down may remove.
type ledger struct {
	Created []hostPathEntry `json:"created"`
}

// records reports whether the ledger lists path as created by the cluster.
func (l ledger) records(path string) bool {
	for _, e := range l.Created {
		if e.Path == path {
			return true
		}
	}
	return false
}

// ensureLedger records which candidates do not exist yet, unless a ledger
// exists already (an earlier Up of the same RunDir wrote it before it
// created anything). The exclusive paths are the cluster's alone (its
// cgroupRoot): one that exists before the first Up belongs to someone else,
// and Up refuses to start rather than run containers in it.
func ensureLedger(path string, candidates []hostPathEntry, exclusive []string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	for _, p := range exclusive {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("cgroup %s: %w: it exists before the first up of this run dir "+
				"(another cluster's, or a leftover: rmdir it if it holds no processes), or choose another --cgroup-root", p, ErrNotOwned)
		}
	}
	var l ledger
	for _, c := range candidates {
		if _, err := os.Lstat(c.Path); isNotExist(err) {
			l.Created = append(l.Created, c)
		}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encode host path ledger: %w", err)
	}
	if err := writeFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("write host path ledger: %w", err)
	}
	return nil
}

// readLedger reads the host path ledger; a missing one records nothing.
func readLedger(path string) (ledger, error) {
	var l ledger
	b, err := os.ReadFile(path)
	if isNotExist(err) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("read host path ledger: %w", err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("parse host path ledger %s: %w", path, err)
	}
	return l, nil
}

// removeLedgerPaths removes, deepest first, the ledger's paths that exist
// now, and returns the removed ones.
func removeLedgerPaths(l ledger) ([]string, error) {
	l.Created = slices.Clone(l.Created)
	sort.SliceStable(l.Created, func(i, j int) bool {
		return strings.Count(l.Created[i].Path, "/") > strings.Count(l.Created[j].Path, "/")
	})
	var removed []string
	var errs []error
	for _, e := range l.Created {
		if _, err := os.Lstat(e.Path); isNotExist(err) {
			continue
		}
		var err error
		switch e.Kind {
		case removeTree:
			err = os.RemoveAll(e.Path)
		case removeEmpty:
			err = syscall.Rmdir(e.Path)
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				entries, _ := os.ReadDir(e.Path)
				names := make([]string, 0, len(entries))
				for _, x := range entries {
					names = append(names, x.Name())
				}
				err = fmt.Errorf("not empty, holds %s", strings.Join(names, ", "))
			}
		case removeCg:
			err = removeCgroupTree(e.Path)
		default:
			err = fmt.Errorf("unknown removal kind %q", e.Kind)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove host path %s: %w", e.Path, err))
			continue
		}
		removed = append(removed, e.Path)
	}
	return removed, errors.Join(errs...)
}

// writeSysctlFiles writes the values the kubelet sees for its sysctls.
func writeSysctlFiles(cfg Config) error {
	if err := os.MkdirAll(sysctlDir(cfg), 0o755); err != nil {
		return fmt.Errorf("write sysctl files: %w", err)
	}
	for _, s := range sysctls {
		if err := os.WriteFile(filepath.Join(sysctlDir(cfg), sysctlFileName(s.key)), []byte(s.value+"\n"), 0o644); err != nil {
			return fmt.Errorf("write sysctl files: %w", err)
		}
	}
	return nil
}

// pidsInCgroups returns the processes in the cgroup dirs and their descendants.
func pidsInCgroups(dirs []string) []int {
	seen := map[int]bool{}
	var walk func(string)
	walk = func(dir string) {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				walk(filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, d := range dirs {
		walk(d)
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	return pids
}
