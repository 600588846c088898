package profile

import (
	"testing"

	"drakit.dev/drakit/emulator/platform"
)

func TestTPUDefaultPlacement(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-tpu-defaulted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []platform.Placement{
		{RootComplex: "rc0", Bus: 0x21}, {RootComplex: "rc0", Bus: 0x22}, {RootComplex: "rc0", Bus: 0x23}, {RootComplex: "rc0", Bus: 0x24},
		{RootComplex: "rc1", Bus: 0x81}, {RootComplex: "rc1", Bus: 0x82}, {RootComplex: "rc1", Bus: 0x83}, {RootComplex: "rc1", Bus: 0x84},
	}
	if len(p.Spec.TPU.Chips) != len(want) {
		t.Fatalf("%d chips, want %d", len(p.Spec.TPU.Chips), len(want))
	}
	for i, c := range p.Spec.TPU.Chips {
		if c.PCIe != want[i] {
			t.Errorf("chips[%d].pcie = %+v, want %+v", i, c.PCIe, want[i])
		}
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.TPUChips) != 8 {
		t.Fatalf("topology has %d TPU chips, want 8", len(topo.TPUChips))
	}
	for i, c := range topo.TPUChips {
		if c.Index != i || c.Function.Address.Bus != int(want[i].Bus) || c.Function.Kind != TPUFunction {
			t.Errorf("TPUChips[%d] = index %d at %s, want index %d on bus %s", i, c.Index, c.Function.Address, i, want[i].Bus)
		}
	}
	if topo.TPUChips[0].HostBridge.NUMANode != 0 || topo.TPUChips[7].HostBridge.NUMANode != -1 {
		t.Errorf("NUMA nodes %d and %d, want 0 and -1", topo.TPUChips[0].HostBridge.NUMANode, topo.TPUChips[7].HostBridge.NUMANode)
	}
}
