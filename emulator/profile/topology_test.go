package profile

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopologyDGXH100(t *testing.T) {
	t.Parallel()
	p, err := Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	type gpu struct {
		Minor       int
		Address     string
		NVML        string
		Bridges     []string
		BridgeBuses [][2]int
		HostBridge  string
		NUMANode    int
	}
	var got []gpu
	for _, g := range topo.GPUs {
		e := gpu{Minor: *g.GPU.Minor, Address: g.Function.Address.String(), NVML: g.Function.Address.NVMLBusID(),
			HostBridge: g.HostBridge.Name(), NUMANode: g.HostBridge.NUMANode}
		for _, b := range g.Bridges {
			e.Bridges = append(e.Bridges, b.Address.String())
			e.BridgeBuses = append(e.BridgeBuses, [2]int{b.SecondaryBus, b.SubordinateBus})
		}
		got = append(got, e)
	}
	want := []gpu{
		{0, "0000:18:00.0", "00000000:18:00.0", []string{"0000:00:01.0", "0000:16:00.0", "0000:17:00.0"}, [][2]int{{0x16, 0x2a}, {0x17, 0x2a}, {0x18, 0x18}}, "pci0000:00", 0},
		{1, "0000:2a:00.0", "00000000:2A:00.0", []string{"0000:00:01.0", "0000:16:00.0", "0000:17:01.0"}, [][2]int{{0x16, 0x2a}, {0x17, 0x2a}, {0x2a, 0x2a}}, "pci0000:00", 0},
		{2, "0000:3a:00.0", "00000000:3A:00.0", []string{"0000:00:02.0", "0000:38:00.0", "0000:39:00.0"}, [][2]int{{0x38, 0x5d}, {0x39, 0x5d}, {0x3a, 0x3a}}, "pci0000:00", 0},
		{3, "0000:5d:00.0", "00000000:5D:00.0", []string{"0000:00:02.0", "0000:38:00.0", "0000:39:01.0"}, [][2]int{{0x38, 0x5d}, {0x39, 0x5d}, {0x5d, 0x5d}}, "pci0000:00", 0},
		{4, "0000:9a:00.0", "00000000:9A:00.0", []string{"0000:80:01.0", "0000:98:00.0", "0000:99:00.0"}, [][2]int{{0x98, 0xab}, {0x99, 0xab}, {0x9a, 0x9a}}, "pci0000:80", 1},
		{5, "0000:ab:00.0", "00000000:AB:00.0", []string{"0000:80:01.0", "0000:98:00.0", "0000:99:01.0"}, [][2]int{{0x98, 0xab}, {0x99, 0xab}, {0xab, 0xab}}, "pci0000:80", 1},
		{6, "0000:ba:00.0", "00000000:BA:00.0", []string{"0000:80:02.0", "0000:b8:00.0", "0000:b9:00.0"}, [][2]int{{0xb8, 0xdb}, {0xb9, 0xdb}, {0xba, 0xba}}, "pci0000:80", 1},
		{7, "0000:db:00.0", "00000000:DB:00.0", []string{"0000:80:02.0", "0000:b8:00.0", "0000:b9:01.0"}, [][2]int{{0xb8, 0xdb}, {0xb9, 0xdb}, {0xdb, 0xdb}}, "pci0000:80", 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
}

func TestTopologyOrderAndDirectPorts(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-snc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, g := range topo.GPUs {
		row := []string{g.Function.Address.String()}
		for _, b := range g.Bridges {
			row = append(row, b.Address.String())
		}
		if g.Index < 0 || &p.Spec.GPUs[g.Index] != g.GPU {
			t.Errorf("PlacedGPU %s: Index %d points at another GPU", g.Function.Address, g.Index)
		}
		got = append(got, row)
	}
	// Domain 0 before domain 1; the direct GPU on bus 5 takes root port 1
	// because its bus comes before the switch's; downstream ports follow
	// bus order, not spec order.
	want := [][]string{
		{"0000:05:00.0", "0000:00:01.0"},
		{"0000:12:00.0", "0000:00:02.0", "0000:10:00.0", "0000:11:00.0"},
		{"0000:14:00.0", "0000:00:02.0", "0000:10:00.0", "0000:11:01.0"},
		{"0000:16:00.0", "0000:00:02.0", "0000:10:00.0", "0000:11:02.0"},
		{"0001:05:00.0", "0001:00:01.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
}

func TestTopologyRejectsInvalid(t *testing.T) {
	t.Parallel()
	p, err := Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.GPUs[3].Minor = ptr(1)
	if _, err := p.Topology(); !errors.Is(err, ErrInvalid) {
		t.Errorf("want ErrInvalid, got %v", err)
	}
}
