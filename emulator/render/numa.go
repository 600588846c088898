package render

import (
	"fmt"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/emulator/platform"
)

// nodeMeminfo is node<id>/meminfo as the kernel prints its first lines
// (drivers/base/node.c): MemTotal, MemFree and MemUsed in kB. The emulated
// node's memory is all free.
func nodeMeminfo(id int, totalKB int64) string {
	return fmt.Sprintf("Node %d MemTotal:       %8d kB\nNode %d MemFree:        %8d kB\nNode %d MemUsed:        %8d kB\n",
		id, totalKB, id, totalKB, id, 0)
}

// numa renders /sys/devices/system/node and the parts of
// /sys/devices/system/cpu that map CPUs to nodes and sockets.
func (s *tree) numa() {
	nodes := s.p.Spec.NUMANodes
	if len(nodes) == 0 {
		return
	}
	var ids, withCPUs []int
	for _, n := range nodes {
		ids = append(ids, *n.ID)
		if len(s.cpus[*n.ID]) > 0 {
			withCPUs = append(withCPUs, *n.ID)
		}
	}
	ids, withCPUs = sortedCopy(ids), sortedCopy(withCPUs)
	base := "sys/devices/system/node"
	s.w.file(filepath.Join(base, "online"), 0o444, platform.FormatCPUList(ids)+"\n")
	s.w.file(filepath.Join(base, "possible"), 0o444, platform.FormatCPUList(ids)+"\n")
	s.w.file(filepath.Join(base, "has_cpu"), 0o444, platform.FormatCPUList(withCPUs)+"\n")
	for _, n := range nodes {
		dir := filepath.Join(base, fmt.Sprintf("node%d", *n.ID))
		cpus := s.cpus[*n.ID]
		s.w.file(filepath.Join(dir, "cpulist"), 0o444, platform.FormatCPUList(cpus)+"\n")
		s.w.file(filepath.Join(dir, "cpumap"), 0o444, platform.FormatCPUMask(cpus, s.nrCPUs)+"\n")
		dist := make([]string, len(n.Distances))
		for i, d := range n.Distances {
			dist[i] = fmt.Sprint(d)
		}
		s.w.file(filepath.Join(dir, "distance"), 0o444, strings.Join(dist, " ")+"\n")
		if n.Memory != nil {
			s.w.file(filepath.Join(dir, "meminfo"), 0o444, nodeMeminfo(*n.ID, n.Memory.Value()/1024))
		}
		for _, c := range cpus {
			cpuDir := filepath.Join("sys/devices/system/cpu", fmt.Sprintf("cpu%d", c))
			s.w.file(filepath.Join(cpuDir, "topology", "physical_package_id"), 0o444, fmt.Sprintf("%d\n", *n.Socket))
			s.w.link(filepath.Join(cpuDir, fmt.Sprintf("node%d", *n.ID)), dir)
		}
	}
	if len(s.allCPU) > 0 {
		list := platform.FormatCPUList(s.allCPU) + "\n"
		for _, name := range []string{"online", "possible", "present"} {
			s.w.file(filepath.Join("sys/devices/system/cpu", name), 0o444, list)
		}
	}
}
