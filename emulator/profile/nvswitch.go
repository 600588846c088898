package profile

import (
	"cmp"
	"fmt"
	"slices"

	"drakit.dev/drakit/emulator/platform"
)

// placeNVSwitches adds n NVSwitch functions to t: switch k sits on a root
// port of host bridge k mod len(t.HostBridges), on the lowest bus of that
// root complex's range that no bridge or endpoint uses, as the NVSwitches
// of an HGX board hang off the CPUs' root ports. Root ports are numbered
// again in bus order.
func (t *Topology) placeNVSwitches(n int) error {
	if n == 0 || len(t.HostBridges) == 0 {
		return nil
	}
	used := map[[2]int]bool{}
	for _, hb := range t.HostBridges {
		d := int(hb.RootComplex.Domain)
		used[[2]int{d, int(hb.RootComplex.Bus)}] = true
		for _, rp := range hb.RootPorts {
			for b := rp.SecondaryBus; b <= rp.SubordinateBus; b++ {
				used[[2]int{d, b}] = true
			}
			if rp.Children[0].Kind == SwitchUpstreamPort {
				used[[2]int{d, rp.Children[0].SecondaryBus}] = true
			}
		}
	}
	for k := range n {
		hb := t.HostBridges[k%len(t.HostBridges)]
		d := int(hb.RootComplex.Domain)
		lo, hi := t.busRange(hb)
		bus := -1
		for b := lo; b <= hi; b++ {
			if !used[[2]int{d, b}] {
				bus = b
				break
			}
		}
		if bus < 0 {
			return fmt.Errorf("no free bus for NVSwitch %d below root complex %s", k, hb.RootComplex.Name)
		}
		used[[2]int{d, bus}] = true
		fn := &PCIFunction{Kind: NVSwitchFunction, Address: platform.Address{Domain: d, Bus: bus}}
		hb.RootPorts = append(hb.RootPorts, &PCIFunction{Kind: RootPort, SecondaryBus: bus, SubordinateBus: bus,
			Children: []*PCIFunction{fn}})
		t.NVSwitches = append(t.NVSwitches, fn)
	}
	for _, hb := range t.HostBridges {
		slices.SortFunc(hb.RootPorts, func(a, b *PCIFunction) int { return cmp.Compare(a.SecondaryBus, b.SecondaryBus) })
		for i, rp := range hb.RootPorts {
			rp.Address = platform.Address{Domain: int(hb.RootComplex.Domain), Bus: int(hb.RootComplex.Bus), Device: i + 1}
		}
	}
	slices.SortFunc(t.NVSwitches, func(a, b *PCIFunction) int { return platform.CompareAddress(a.Address, b.Address) })
	return nil
}

// busRange is the buses below hb's root bus up to the next root complex of
// its domain.
func (t *Topology) busRange(hb *HostBridge) (int, int) {
	rc := hb.RootComplex
	hi := 0xff
	for _, o := range t.HostBridges {
		if o != hb && o.RootComplex.Domain == rc.Domain && o.RootComplex.Bus > rc.Bus && int(o.RootComplex.Bus)-1 < hi {
			hi = int(o.RootComplex.Bus) - 1
		}
	}
	return int(rc.Bus) + 1, hi
}
