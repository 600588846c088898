package cpudriver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// nodeSysfs is where the kernel lists the NUMA nodes, below the host root.
const nodeSysfs = "sys/devices/system/node"

// maxCPU bounds the CPU ids of a cpulist (the kernel's NR_CPUS is at most
// 8192), so that a bad range cannot make the parser allocate without end.
const maxCPU = 8192

// numaNode is one NUMA node of the host as sysfs shows it.
type numaNode struct {
	ID int
	// CPUs are the node's CPU ids, ascending; CPUList is the kernel's
	// text of them (node<id>/cpulist without the newline).
	CPUs    []int
	CPUList string
	// MemoryBytes is node<id>/meminfo's MemTotal.
	MemoryBytes int64
}

var nodeDirPattern = regexp.MustCompile(`^node(0|[1-9][0-9]*)$`)

// discover reads the NUMA nodes below root/sys/devices/system/node: every
// node<id> directory with CPUs (cpulist) and memory (meminfo's MemTotal),
// by id. A node without CPUs or without memory (a memory-only or CPU-less
// node) is left out: it has nothing to hand out as both. No NUMA node at
// all is an error, as is a cpulist or meminfo that does not parse.
func discover(root string) ([]numaNode, error) {
	dir := filepath.Join(root, nodeSysfs)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list NUMA nodes in %s: %w", dir, err)
	}
	var nodes []numaNode
	for _, e := range entries {
		m := nodeDirPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		id, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("parse NUMA node %s: %w", e.Name(), err)
		}
		n, ok, err := readNode(filepath.Join(dir, e.Name()), id)
		if err != nil {
			return nil, err
		}
		if ok {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("discover NUMA nodes: none with CPUs and meminfo in %s", dir)
	}
	slices.SortFunc(nodes, func(a, b numaNode) int { return a.ID - b.ID })
	return nodes, nil
}

// readNode reads one node<id> directory; ok is false for a node without
// CPUs or without a meminfo file.
func readNode(dir string, id int) (numaNode, bool, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "cpulist"))
	if err != nil {
		return numaNode{}, false, fmt.Errorf("read cpulist of NUMA node %d: %w", id, err)
	}
	list := strings.TrimSpace(string(raw))
	cpus, err := parseCPUList(list)
	if err != nil {
		return numaNode{}, false, fmt.Errorf("parse %s: %w", filepath.Join(dir, "cpulist"), err)
	}
	meminfo, err := os.ReadFile(filepath.Join(dir, "meminfo"))
	if errors.Is(err, fs.ErrNotExist) {
		return numaNode{}, false, nil
	}
	if err != nil {
		return numaNode{}, false, fmt.Errorf("read meminfo of NUMA node %d: %w", id, err)
	}
	mem, err := parseMemTotal(meminfo, id)
	if err != nil {
		return numaNode{}, false, fmt.Errorf("parse %s: %w", filepath.Join(dir, "meminfo"), err)
	}
	if len(cpus) == 0 || mem == 0 {
		return numaNode{}, false, nil
	}
	return numaNode{ID: id, CPUs: cpus, CPUList: list, MemoryBytes: mem}, true, nil
}

// parseCPUList parses the kernel's list format ("0-63,128-191", "" for
// none) into ascending, distinct CPU ids below maxCPU.
func parseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var cpus []int
	last := -1
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := cpuID(lo)
		if err != nil {
			return nil, fmt.Errorf("cpulist %q: %w", s, err)
		}
		end := first
		if isRange {
			if end, err = cpuID(hi); err != nil {
				return nil, fmt.Errorf("cpulist %q: %w", s, err)
			}
			if end < first {
				return nil, fmt.Errorf("cpulist %q: range %s runs backwards", s, part)
			}
		}
		if first <= last {
			return nil, fmt.Errorf("cpulist %q: %s is not above the CPUs before it", s, part)
		}
		for c := first; c <= end; c++ {
			cpus = append(cpus, c)
		}
		last = end
	}
	return cpus, nil
}

// cpuID parses one CPU id: decimal digits without sign or leading zeros,
// below maxCPU.
func cpuID(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a CPU id", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= maxCPU {
		return 0, fmt.Errorf("CPU id %q is not below %d", s, maxCPU)
	}
	return n, nil
}

// parseMemTotal finds "Node <id> MemTotal: <n> kB" in a node's meminfo and
// returns n KiB in bytes.
func parseMemTotal(meminfo []byte, id int) (int64, error) {
	prefix := fmt.Sprintf("Node %d MemTotal:", id)
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("line %q: want %s <n> kB", sc.Text(), prefix)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > (1<<53)/1024 {
			return 0, fmt.Errorf("line %q: %q is not a size in kB", sc.Text(), f[0])
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %q line", prefix)
}
