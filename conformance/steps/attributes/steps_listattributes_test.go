package attributes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"drakit.dev/drakit/conformance/kit"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

// TestSysfsCloseNUMANodes reads the close NUMA nodes of PCI functions from
// a sysfs of four NUMA nodes on two sockets (nodes 0 and 1 on socket 0,
// 2 on socket 1, 3 without CPUs), node 1 at the same distance from 0, 2 and
// 3, node 0 with a distance row that misses nothing.
func TestSysfsCloseNUMANodes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nodes := "devices/system/node/"
	write(nodes+"node0/distance", "10 12 20 12\n")
	write(nodes+"node1/distance", "12 10 12 12\n")
	write(nodes+"node2/distance", "20 12 10 20\n")
	write(nodes+"node3/distance", "12 12 20 10\n")
	write(nodes+"node0/cpulist", "0-3\n")
	write(nodes+"node1/cpulist", "4-7\n")
	write(nodes+"node2/cpulist", "8-11\n")
	write(nodes+"node3/cpulist", "\n")
	// Every CPU has its socket: deviceattribute reads the one of any CPU
	// of a node (cpuset's UnsortedList), the kit the first.
	for cpu := range 12 {
		write(fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu), fmt.Sprintf("%d\n", cpu/8))
	}
	pci := "bus/pci/devices/"
	write(pci+"0000:01:00.0/numa_node", "0\n")  // nodes 1 and 3 at 12, 3's socket unknown
	write(pci+"0000:02:00.0/numa_node", "1\n")  // 0, 2 and 3 at 12; 2 on another socket
	write(pci+"0000:03:00.0/numa_node", "2\n")  // 1 at 12, on another socket
	write(pci+"0000:04:00.0/numa_node", "-1\n") // no NUMA node
	write(pci+"0000:05:00.0/numa_node", "7\n")  // no distance row
	w := &world{World: kit.NewWorld(kit.Config{NodeSysfsRoot: root}, nil, "")}
	for addr, want := range map[string][]int64{
		"0000:01:00.0": {0, 1, 3},
		"0000:02:00.0": {1, 0, 3},
		"0000:03:00.0": {2},
		"0000:04:00.0": nil,
		"0000:05:00.0": {7},
	} {
		got, err := w.sysfsCloseNUMANodes(addr)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: close NUMA nodes %v, want %v", addr, got, want)
		}
		// The rule is the list form of the standard numaNode, as the
		// upstream helper drivers use builds it.
		upstream, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(addr, deviceattribute.ListAttribute, deviceattribute.WithFSFromRoot(root))
		if (err == nil) != (want != nil) || err == nil && !slices.Equal(upstream.Value.IntValues, want) {
			t.Errorf("%s: deviceattribute gives %v (%v), the kit %v", addr, upstream.Value.IntValues, err, want)
		}
	}
	if _, err := w.sysfsCloseNUMANodes("0000:09:00.0"); err == nil {
		t.Error("a PCI function missing from sysfs: no error")
	}
}
