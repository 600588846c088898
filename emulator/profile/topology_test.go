package profile

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/platform"
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
	// Each switch carries two GPUs and their two ConnectX-7; the
	// downstream ports follow bus order, so a GPU's NIC takes the port
	// after it.
	want := []gpu{
		{0, "0000:18:00.0", "00000000:18:00.0", []string{"0000:00:01.0", "0000:16:00.0", "0000:17:00.0"}, [][2]int{{0x16, 0x2b}, {0x17, 0x2b}, {0x18, 0x18}}, "pci0000:00", 0},
		{1, "0000:2a:00.0", "00000000:2A:00.0", []string{"0000:00:01.0", "0000:16:00.0", "0000:17:02.0"}, [][2]int{{0x16, 0x2b}, {0x17, 0x2b}, {0x2a, 0x2a}}, "pci0000:00", 0},
		{2, "0000:3a:00.0", "00000000:3A:00.0", []string{"0000:00:02.0", "0000:38:00.0", "0000:39:00.0"}, [][2]int{{0x38, 0x5e}, {0x39, 0x5e}, {0x3a, 0x3a}}, "pci0000:00", 0},
		{3, "0000:5d:00.0", "00000000:5D:00.0", []string{"0000:00:02.0", "0000:38:00.0", "0000:39:02.0"}, [][2]int{{0x38, 0x5e}, {0x39, 0x5e}, {0x5d, 0x5d}}, "pci0000:00", 0},
		{4, "0000:9a:00.0", "00000000:9A:00.0", []string{"0000:80:01.0", "0000:98:00.0", "0000:99:00.0"}, [][2]int{{0x98, 0xac}, {0x99, 0xac}, {0x9a, 0x9a}}, "pci0000:80", 1},
		{5, "0000:ab:00.0", "00000000:AB:00.0", []string{"0000:80:01.0", "0000:98:00.0", "0000:99:02.0"}, [][2]int{{0x98, 0xac}, {0x99, 0xac}, {0xab, 0xab}}, "pci0000:80", 1},
		{6, "0000:ba:00.0", "00000000:BA:00.0", []string{"0000:80:02.0", "0000:b8:00.0", "0000:b9:00.0"}, [][2]int{{0xb8, 0xdc}, {0xb9, 0xdc}, {0xba, 0xba}}, "pci0000:80", 1},
		{7, "0000:db:00.0", "00000000:DB:00.0", []string{"0000:80:02.0", "0000:b8:00.0", "0000:b9:02.0"}, [][2]int{{0xb8, 0xdc}, {0xb9, 0xdc}, {0xdb, 0xdb}}, "pci0000:80", 1},
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

// TestTopologyNICs checks dgx-h100's and dgx-a100-mig's NICs: in PCI order,
// each behind a switch that also carries GPUs, so that every GPU shares its
// switch (and pcieRoot and NUMA node) with a NIC.
func TestTopologyNICs(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"dgx-h100": {
			"0000:19:00.0 enp25s0np0 pci0000:00 0000:17:01.0",
			"0000:2b:00.0 enp43s0np0 pci0000:00 0000:17:03.0",
			"0000:3b:00.0 enp59s0np0 pci0000:00 0000:39:01.0",
			"0000:5e:00.0 enp94s0np0 pci0000:00 0000:39:03.0",
			"0000:9b:00.0 enp155s0np0 pci0000:80 0000:99:01.0",
			"0000:ac:00.0 enp172s0np0 pci0000:80 0000:99:03.0",
			"0000:bb:00.0 enp187s0np0 pci0000:80 0000:b9:01.0",
			"0000:dc:00.0 enp220s0np0 pci0000:80 0000:b9:03.0",
		},
		"dgx-a100-mig": {
			"0000:0c:00.0 enp12s0np0 pci0000:00 0000:06:01.0",
			"0000:12:00.0 enp18s0np0 pci0000:00 0000:06:03.0",
			"0000:4b:00.0 enp75s0np0 pci0000:00 0000:46:01.0",
			"0000:54:00.0 enp84s0np0 pci0000:00 0000:46:03.0",
			"0000:8d:00.0 enp141s0np0 pci0000:80 0000:86:01.0",
			"0000:94:00.0 enp148s0np0 pci0000:80 0000:86:03.0",
			"0000:ba:00.0 enp186s0np0 pci0000:80 0000:b6:01.0",
			"0000:cc:00.0 enp204s0np0 pci0000:80 0000:b6:03.0",
		},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			topo, err := p.Topology()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			switchOf := func(bridges []*PCIFunction) *platform.Switch { return bridges[1].Switch }
			nicSwitches := map[*platform.Switch]int{}
			for _, n := range topo.NICs {
				if n.Index < 0 || &p.Spec.NICs[n.Index] != n.NIC {
					t.Errorf("PlacedNIC %s: Index %d points at another NIC", n.Function.Address, n.Index)
				}
				got = append(got, fmt.Sprintf("%s %s %s %s", n.Function.Address, n.NIC.Interface, n.HostBridge.Name(),
					n.Bridges[len(n.Bridges)-1].Address))
				nicSwitches[switchOf(n.Bridges)]++
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NICs (-want +got):\n%s", diff)
			}
			for _, g := range topo.GPUs {
				if nicSwitches[switchOf(g.Bridges)] == 0 {
					t.Errorf("GPU %s has no NIC behind its switch", g.Function.Address)
				}
			}
		})
	}
}
