package profile

import (
	"cmp"
	"fmt"
	"slices"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/tpu"
)

// PCIKind says what a PCI function in the tree is.
type PCIKind int

// The kinds of PCI functions the emulator renders.
const (
	RootPort PCIKind = iota
	SwitchUpstreamPort
	SwitchDownstreamPort
	GPUFunction
	// NICFunction is a NIC's physical function.
	NICFunction
	// NVSwitchFunction is an NVSwitch chip (spec.nvlink.nvswitches).
	NVSwitchFunction
	// TPUFunction is a TPU chip.
	TPUFunction
)

// PCIFunction is one function in the PCIe tree below a host bridge.
type PCIFunction struct {
	Kind    PCIKind
	Address platform.Address
	// SecondaryBus and SubordinateBus are the bus range a bridge forwards.
	SecondaryBus, SubordinateBus int
	// Switch is the switch a port belongs to (upstream and downstream ports).
	Switch *platform.Switch
	// GPU is set for GPUFunction.
	GPU *gpu.GPU
	// NIC is set for NICFunction.
	NIC *nic.NIC
	// TPU is set for TPUFunction.
	TPU *tpu.Chip
	// Children are the functions on the bridge's secondary bus.
	Children []*PCIFunction
}

// HostBridge is a root complex with its root ports.
type HostBridge struct {
	RootComplex *platform.RootComplex
	// NUMANode is the root complex's NUMA node, -1 without affinity.
	NUMANode  int
	RootPorts []*PCIFunction
}

// Name is the host bridge's sysfs directory name, "pci0000:00".
func (h *HostBridge) Name() string {
	return fmt.Sprintf("pci%04x:%02x", int(h.RootComplex.Domain), int(h.RootComplex.Bus))
}

// PlacedGPU is a GPU with its resolved place in the tree.
type PlacedGPU struct {
	GPU *gpu.GPU
	// Index is the GPU's position in spec.gpus.
	Index      int
	Function   *PCIFunction
	HostBridge *HostBridge
	// Bridges are the bridges above the GPU, root port first.
	Bridges []*PCIFunction
}

// PlacedNIC is a NIC with its resolved place in the tree.
type PlacedNIC struct {
	NIC *nic.NIC
	// Index is the NIC's position in spec.nics.
	Index      int
	Function   *PCIFunction
	HostBridge *HostBridge
	// Bridges are the bridges above the NIC, root port first.
	Bridges []*PCIFunction
}

// PlacedTPUChip is a TPU chip with its resolved place in the tree.
type PlacedTPUChip struct {
	Chip *tpu.Chip
	// Index is the chip's position in spec.tpu.chips, its index on the
	// host (/dev/accel<Index>).
	Index      int
	Function   *PCIFunction
	HostBridge *HostBridge
	// Bridges are the bridges above the chip, root port first.
	Bridges []*PCIFunction
}

// Topology is a validated profile's PCIe tree.
type Topology struct {
	// HostBridges in (domain, bus) order.
	HostBridges []*HostBridge
	// GPUs in PCI address order, NVML's enumeration order.
	GPUs []PlacedGPU
	// NICs in PCI address order, the order the kernel probes them.
	NICs []PlacedNIC
	// NVSwitches in PCI address order (see placeNVSwitches).
	NVSwitches []*PCIFunction
	// TPUChips in chip index order (spec.tpu.chips).
	TPUChips []PlacedTPUChip
}

// Topology validates p and resolves its PCIe tree: root ports get device
// numbers 1, 2, … on the root bus in the order of the buses they lead to,
// downstream ports of a switch get device numbers 0, 1, … on the switch's
// internal bus in the order of their devices' buses, and every function is
// function 0. The returned tree points into p.
func (p *Profile) Topology() (*Topology, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, NewValidationError("profile "+p.Metadata.Name, errs)
	}
	t := &Topology{}
	for ri := range p.Spec.RootComplexes {
		rc := &p.Spec.RootComplexes[ri]
		hb := &HostBridge{RootComplex: rc, NUMANode: -1}
		if rc.NUMANode != nil {
			hb.NUMANode = *rc.NUMANode
		}
		domain := int(rc.Domain)
		switches := make(map[string]*PCIFunction)
		var upstream []*PCIFunction
		for si := range rc.Switches {
			sw := &rc.Switches[si]
			up := &PCIFunction{Kind: SwitchUpstreamPort, Switch: sw,
				Address:      platform.Address{Domain: domain, Bus: int(sw.Bus)},
				SecondaryBus: int(sw.Bus) + 1, SubordinateBus: int(sw.Bus) + 1}
			switches[sw.Name] = up
			upstream = append(upstream, up)
		}
		var endpoints []*PCIFunction
		place := func(pl platform.Placement, fn *PCIFunction) {
			fn.Address = platform.Address{Domain: domain, Bus: int(pl.Bus)}
			if up, ok := switches[pl.Switch]; ok {
				up.Children = append(up.Children, &PCIFunction{Kind: SwitchDownstreamPort, Switch: up.Switch,
					SecondaryBus: fn.Address.Bus, SubordinateBus: fn.Address.Bus, Children: []*PCIFunction{fn}})
				up.SubordinateBus = max(up.SubordinateBus, fn.Address.Bus)
				return
			}
			endpoints = append(endpoints, fn)
		}
		for gi := range p.Spec.GPUs {
			if g := &p.Spec.GPUs[gi]; g.PCIe.RootComplex == rc.Name {
				place(g.PCIe, &PCIFunction{Kind: GPUFunction, GPU: g})
			}
		}
		for ni := range p.Spec.NICs {
			if n := &p.Spec.NICs[ni]; n.PCIe.RootComplex == rc.Name {
				place(n.PCIe, &PCIFunction{Kind: NICFunction, NIC: n})
			}
		}
		if h := p.Spec.TPU; h != nil {
			for ci := range h.Chips {
				if c := &h.Chips[ci]; c.PCIe.RootComplex == rc.Name {
					place(c.PCIe, &PCIFunction{Kind: TPUFunction, TPU: c})
				}
			}
		}
		// One root port per switch and per directly attached endpoint.
		var ports []*PCIFunction
		for _, up := range upstream {
			slices.SortFunc(up.Children, func(a, b *PCIFunction) int { return cmp.Compare(a.SecondaryBus, b.SecondaryBus) })
			for dev, down := range up.Children {
				down.Address = platform.Address{Domain: domain, Bus: up.SecondaryBus, Device: dev}
			}
			ports = append(ports, &PCIFunction{Kind: RootPort, SecondaryBus: up.Address.Bus,
				SubordinateBus: up.SubordinateBus, Children: []*PCIFunction{up}})
		}
		for _, ep := range endpoints {
			ports = append(ports, &PCIFunction{Kind: RootPort, SecondaryBus: ep.Address.Bus,
				SubordinateBus: ep.Address.Bus, Children: []*PCIFunction{ep}})
		}
		slices.SortFunc(ports, func(a, b *PCIFunction) int { return cmp.Compare(a.SecondaryBus, b.SecondaryBus) })
		for i, rp := range ports {
			rp.Address = platform.Address{Domain: domain, Bus: int(rc.Bus), Device: i + 1}
		}
		hb.RootPorts = ports
		t.HostBridges = append(t.HostBridges, hb)
	}
	slices.SortFunc(t.HostBridges, func(a, b *HostBridge) int {
		return cmp.Or(cmp.Compare(a.RootComplex.Domain, b.RootComplex.Domain), cmp.Compare(a.RootComplex.Bus, b.RootComplex.Bus))
	})
	if p.Spec.NVLink != nil {
		if err := t.placeNVSwitches(p.Spec.NVLink.NVSwitches); err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Metadata.Name, err)
		}
	}
	for _, hb := range t.HostBridges {
		for _, rp := range hb.RootPorts {
			t.collect(p, hb, rp, nil)
		}
	}
	slices.SortFunc(t.GPUs, func(a, b PlacedGPU) int { return platform.CompareAddress(a.Function.Address, b.Function.Address) })
	slices.SortFunc(t.NICs, func(a, b PlacedNIC) int { return platform.CompareAddress(a.Function.Address, b.Function.Address) })
	slices.SortFunc(t.TPUChips, func(a, b PlacedTPUChip) int { return cmp.Compare(a.Index, b.Index) })
	return t, nil
}

// collect adds the GPUs, NICs and TPU chips at and below fn to t.
func (t *Topology) collect(p *Profile, hb *HostBridge, fn *PCIFunction, above []*PCIFunction) {
	switch fn.Kind {
	case GPUFunction:
		index := -1
		for i := range p.Spec.GPUs {
			if &p.Spec.GPUs[i] == fn.GPU {
				index = i
			}
		}
		t.GPUs = append(t.GPUs, PlacedGPU{GPU: fn.GPU, Index: index, Function: fn, HostBridge: hb, Bridges: slices.Clone(above)})
		return
	case NICFunction:
		index := -1
		for i := range p.Spec.NICs {
			if &p.Spec.NICs[i] == fn.NIC {
				index = i
			}
		}
		t.NICs = append(t.NICs, PlacedNIC{NIC: fn.NIC, Index: index, Function: fn, HostBridge: hb, Bridges: slices.Clone(above)})
		return
	case TPUFunction:
		index := -1
		for i := range p.Spec.TPU.Chips {
			if &p.Spec.TPU.Chips[i] == fn.TPU {
				index = i
			}
		}
		t.TPUChips = append(t.TPUChips, PlacedTPUChip{Chip: fn.TPU, Index: index, Function: fn, HostBridge: hb, Bridges: slices.Clone(above)})
		return
	}
	for _, c := range fn.Children {
		t.collect(p, hb, c, append(above, fn))
	}
}
