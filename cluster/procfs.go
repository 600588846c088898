package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// procRef identifies one process: a PID alone can be reused after the
// process exits, the pair (PID, start time in clock ticks since boot) cannot.
type procRef struct {
	PID   int
	Start uint64
}

// procStat reads a process's state letter and start time from /proc/<pid>/stat.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStat(string(b))
}

// parseStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')': field 3 is the state, field 22 the start time.
func parseStat(s string) (state byte, start uint64, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse stat %q: no command name", s)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("parse stat %q: too few fields", s)
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse stat start time %q: %w", fields[19], err)
	}
	return fields[0][0], start, nil
}

// refOf returns the procRef of a running process.
func refOf(pid int) (procRef, error) {
	_, start, err := procStat(pid)
	if err != nil {
		return procRef{}, fmt.Errorf("inspect process %d: %w", pid, err)
	}
	return procRef{PID: pid, Start: start}, nil
}

// alive reports whether the process still exists and is not a zombie.
func (p procRef) alive() bool {
	if p.PID <= 0 {
		return false
	}
	state, start, err := procStat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// writePIDFile records a process as "<pid> <start time>".
func writePIDFile(path string, p procRef) error {
	return writeFileAtomic(path, []byte(fmt.Sprintf("%d %d\n", p.PID, p.Start)), 0o644)
}

// readPIDFile returns the process a PID file records; an absent file is an
// error that wraps os.ErrNotExist.
func readPIDFile(path string) (procRef, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procRef{}, err
	}
	var p procRef
	if _, err := fmt.Sscanf(string(b), "%d %d", &p.PID, &p.Start); err != nil || p.PID <= 0 {
		return procRef{}, fmt.Errorf("parse PID file %s: %q is not \"<pid> <start time>\"", path, strings.TrimSpace(string(b)))
	}
	return p, nil
}

// procInfo is what teardown and its test look at in a process.
type procInfo struct {
	PID     int
	Cmdline []string
	Exe     string
	Cwd     string
	Cgroups []string // the cgroup path of each hierarchy line of /proc/<pid>/cgroup
}

// listProcesses returns every process visible in /proc except the calling
// one. Processes that exit while being read are skipped.
func listProcesses() ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var procs []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		p := procInfo{PID: pid, Cmdline: splitCmdline(raw)}
		p.Exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		p.Cwd, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil {
			p.Cgroups = parseProcCgroup(string(cg))
		}
		procs = append(procs, p)
	}
	return procs, nil
}

func splitCmdline(raw []byte) []string {
	raw = bytes.TrimRight(raw, "\x00")
	if len(raw) == 0 {
		return nil
	}
	return strings.Split(string(raw), "\x00")
}

// parseProcCgroup returns the paths of "<id>:<controllers>:<path>" lines.
func parseProcCgroup(s string) []string {
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			paths = append(paths, parts[2])
		}
	}
	return paths
}

// references reports whether a process names dir (or a path below it) in
// its command line or has its working directory there.
func (p procInfo) references(dir string) bool {
	if isUnder(p.Cwd, dir) {
		return true
	}
	for _, arg := range p.Cmdline {
		if strings.Contains(arg, dir+"/") || arg == dir || strings.HasSuffix(arg, "="+dir) {
			return true
		}
	}
	return false
}

// inCgroup reports whether the process is in cgroup root (a path like
// /drakit-kubelet) or below it in any hierarchy.
func (p procInfo) inCgroup(root string) bool {
	for _, c := range p.Cgroups {
		if isUnder(c, root) {
			return true
		}
	}
	return false
}

// isUnder reports whether p is dir or inside it.
func isUnder(p, dir string) bool {
	return p != "" && (p == dir || strings.HasPrefix(p, dir+"/"))
}

// rssBytes returns a process's resident set size.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("process %d: no VmRSS in status", pid)
}

// mountEntry is one line of /proc/<pid>/mountinfo.
type mountEntry struct {
	ID         int
	MountPoint string
	Optional   []string // e.g. shared:12, master:3
	FSType     string
}

// readMountInfo parses a mountinfo file.
func readMountInfo(path string) ([]mountEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	return parseMountInfo(f)
}

// parseMountInfo parses mountinfo lines:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Mount points have spaces, tabs, newlines and backslashes escaped in octal.
func parseMountInfo(r io.Reader) ([]mountEntry, error) {
	var mounts []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 10 || sep < 0 || sep+1 >= len(fields) {
			return nil, fmt.Errorf("parse mountinfo line %d: %q", n, sc.Text())
		}
		id, err := strconv.Atoi(fields[0])
		if err != nil {
			return nil, fmt.Errorf("parse mountinfo line %d: mount ID %q", n, fields[0])
		}
		mounts = append(mounts, mountEntry{
			ID: id, MountPoint: unescapeOctal(fields[4]), Optional: fields[6:sep], FSType: fields[sep+1],
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	return mounts, nil
}

// unescapeOctal undoes the kernel's \NNN escaping of mount paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder returns the mounts at or below any of dirs, deepest (latest)
// first, the order in which they can be unmounted.
func mountsUnder(mounts []mountEntry, dirs ...string) []mountEntry {
	var under []mountEntry
	for i := len(mounts) - 1; i >= 0; i-- {
		if slices.ContainsFunc(dirs, func(dir string) bool { return isUnder(mounts[i].MountPoint, dir) }) {
			under = append(under, mounts[i])
		}
	}
	sort.SliceStable(under, func(i, j int) bool {
		return strings.Count(under[i].MountPoint, "/") > strings.Count(under[j].MountPoint, "/")
	})
	return under
}

// mountOf returns the mount that contains path (the last-mounted one with the
// longest matching mount point).
func mountOf(mounts []mountEntry, path string) (mountEntry, error) {
	best := -1
	for i, m := range mounts {
		if isUnder(path, m.MountPoint) || m.MountPoint == "/" {
			if best < 0 || len(m.MountPoint) >= len(mounts[best].MountPoint) {
				best = i
			}
		}
	}
	if best < 0 {
		return mountEntry{}, fmt.Errorf("no mount contains %s", path)
	}
	return mounts[best], nil
}

// shared reports whether the mount propagates mounts to peers.
func (m mountEntry) shared() bool {
	for _, o := range m.Optional {
		if strings.HasPrefix(o, "shared:") {
			return true
		}
	}
	return false
}

// isNotExist reports whether err says a file or process is gone.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
