package driver

import (
	"path/filepath"
	"slices"
	"testing"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

// TestBuildResourcesListAttribute publishes closeNUMANodes as an int list
// on whole GPUs and their MIG partitions, and holds slices with it to 64
// devices.
func TestBuildResourcesListAttribute(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	for i := range inv.GPUs {
		inv.GPUs[i].CloseNUMANodes = []int64{int64(inv.GPUs[i].NUMANode), 7}
	}
	res, err := buildResources(testNode, inv, publishOptions{DriverName: DefaultDriverName})
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, s := range res.Pools[testNode].Slices {
		for _, d := range s.Devices {
			a, ok := d.Attributes[closeNUMANodesAttributeName]
			if !ok || a.IntValue != nil || len(a.IntValues) != 2 || a.IntValues[1] != 7 {
				t.Errorf("device %s: closeNUMANodes %+v, want an int list ending in 7", d.Name, a)
			}
			published++
		}
	}
	if published == 0 {
		t.Fatal("no devices published")
	}

	many := &Inventory{DriverVersion: "570.172.08", CUDADriverVersion: 12080}
	for i := range 100 {
		g := testInventory().GPUs[0]
		g.Index, g.Minor, g.CloseNUMANodes = i, i, []int64{0}
		many.GPUs = append(many.GPUs, g)
	}
	res, err = buildResources(testNode, many, publishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, s := range res.Pools[testNode].Slices {
		sizes = append(sizes, len(s.Devices))
	}
	if !slices.Equal(sizes, []int{64, 36}) {
		t.Errorf("slice sizes %v with a list attribute, want [64 36]", sizes)
	}
}

// TestDiscoverCloseNUMANodes discovers the dgx-a100-mig profile (two
// sockets, one NUMA node each, SLIT distance 32 between them) with
// ListAttributes: each GPU is close to its own node only, the other being
// on another socket. Not parallel: see renderAndDiscover.
func TestDiscoverCloseNUMANodes(t *testing.T) {
	root := renderProfile(t, builtinProfile(t, "dgx-a100-mig"))
	t.Setenv(nvmltest.RootEnv, root)
	disc, _, err := NewNVMLDiscoverer(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	disc.ListAttributes = true
	inv, err := disc.Discover(t.Context())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	if len(inv.GPUs) == 0 {
		t.Fatal("no GPUs discovered")
	}
	for _, g := range inv.GPUs {
		if g.NUMANode < 0 || !slices.Equal(g.CloseNUMANodes, []int64{int64(g.NUMANode)}) {
			t.Errorf("GPU %d (%s, NUMA node %d): closeNUMANodes %v, want [%d]", g.Minor, g.PCIBusID, g.NUMANode, g.CloseNUMANodes, g.NUMANode)
		}
	}
}
