package cpudriver

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// TestDiscoverTheEmulatedDGXA100: on the emulator's dgx-a100-mig node the
// driver finds its two NUMA nodes of 128 CPUs and 512Gi each, as the
// profile declares them, and publishes numa-0 and numa-1.
func TestDiscoverTheEmulatedDGXA100(t *testing.T) {
	probe := filepath.Join(t.TempDir(), "probe")
	if err := unix.Mknod(probe, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering the emulated node needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Builtin("dgx-a100-mig")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(t.Context(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	nodes, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		list string
		mem  int64
	}{{"0-63,128-191", 512 << 30}, {"64-127,192-255", 512 << 30}}
	if len(nodes) != len(want) {
		t.Fatalf("discover = %+v, want 2 NUMA nodes", nodes)
	}
	for i, w := range want {
		if n := nodes[i]; n.ID != i || n.CPUList != w.list || len(n.CPUs) != 128 || n.MemoryBytes != w.mem {
			t.Errorf("NUMA node %d = id %d, %q (%d CPUs), %d bytes; want %q (128 CPUs), %d bytes", i, n.ID, n.CPUList, len(n.CPUs), n.MemoryBytes, w.list, w.mem)
		}
	}
	devs := buildResources("node", nodes).Pools["node"].Slices[0].Devices
	if len(devs) != 2 || devs[0].Name != "numa-0" || devs[1].Name != "numa-1" {
		t.Errorf("devices %v, want numa-0 and numa-1", devs)
	}
}
