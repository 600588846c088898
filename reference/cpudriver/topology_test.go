package cpudriver

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr string
	}{
		{in: "", want: nil},
		{in: "0", want: []int{0}},
		{in: "0-3,8,10-11", want: []int{0, 1, 2, 3, 8, 10, 11}},
		{in: "3-1", wantErr: "runs backwards"},
		{in: "2,1", wantErr: "not above"},
		{in: "0-2,2", wantErr: "not above"},
		{in: "01", wantErr: "not a CPU id"},
		{in: "-1", wantErr: "not a CPU id"},
		{in: "0-8192", wantErr: "not below 8192"},
		{in: "1,,2", wantErr: "not a CPU id"},
	} {
		got, err := parseCPUList(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseCPUList(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0-63,128-191", "3-1", "1,,2", "0-8191"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			return
		}
		for i, c := range cpus {
			if c < 0 || c >= maxCPU || (i > 0 && c <= cpus[i-1]) {
				t.Fatalf("parseCPUList(%q) = %v: not ascending ids below %d", s, cpus, maxCPU)
			}
		}
	})
}

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal([]byte("Node 1 MemTotal:       536870912 kB\nNode 1 MemFree:        536870912 kB\n"), 1)
	if err != nil || got != 512<<30 {
		t.Errorf("parseMemTotal = %d, %v; want %d", got, err, int64(512<<30))
	}
	for _, bad := range []string{"Node 0 MemTotal: 5 kB\n", "Node 1 MemTotal: x kB\n", "Node 1 MemTotal: 5 MB\n", ""} {
		if n, err := parseMemTotal([]byte(bad), 1); err == nil {
			t.Errorf("parseMemTotal(%q) = %d, want an error", bad, n)
		}
	}
}

func FuzzParseMemTotal(f *testing.F) {
	f.Add([]byte("Node 0 MemTotal:       1024 kB\n"))
	f.Add([]byte("Node 0 MemTotal: 99999999999999999999 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := parseMemTotal(b, 0); err == nil && (n < 0 || n%1024 != 0) {
			t.Fatalf("parseMemTotal(%q) = %d: not a whole number of KiB", b, n)
		}
	})
}

// writeNode writes node<id>/cpulist and, unless memKB < 0, node<id>/meminfo
// below root as the kernel does.
func writeNode(t *testing.T, root string, id int, cpulist string, memKB int64) {
	t.Helper()
	dir := filepath.Join(root, nodeSysfs, "node"+strconv.Itoa(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpulist"), []byte(cpulist+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if memKB >= 0 {
		info := "Node " + strconv.Itoa(id) + " MemTotal:       " + strconv.FormatInt(memKB, 10) + " kB\nNode " + strconv.Itoa(id) + " MemFree:        0 kB\n"
		if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(info), 0o444); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	writeNode(t, root, 1, "64-127,192-255", 512<<20)
	writeNode(t, root, 0, "0-63,128-191", 512<<20)
	writeNode(t, root, 2, "", 1<<20) // memory only
	writeNode(t, root, 3, "256", -1) // no meminfo
	if err := os.WriteFile(filepath.Join(root, nodeSysfs, "online"), []byte("0-3\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	nodes, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].ID != 0 || nodes[1].ID != 1 {
		t.Fatalf("discover = %+v, want nodes 0 and 1", nodes)
	}
	if len(nodes[1].CPUs) != 128 || nodes[1].CPUList != "64-127,192-255" || nodes[1].MemoryBytes != 512<<30 {
		t.Errorf("node 1 = %d CPUs %q, %d bytes; want 128 CPUs 64-127,192-255, 512Gi", len(nodes[1].CPUs), nodes[1].CPUList, nodes[1].MemoryBytes)
	}
	if _, err := discover(t.TempDir()); err == nil {
		t.Error("discover of a root without sys/devices/system/node succeeded")
	}
}
