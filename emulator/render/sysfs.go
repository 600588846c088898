package render

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	kfs "drakit.dev/drakit/emulator/internal/sysfs"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/profile"
)

// PCI identities of the bridges the renderer puts above the endpoints: an
// Intel Xeon (Sapphire Rapids) root port and the ports of a Broadcom
// PEX89000 switch, the parts of an HGX H100 board.
type pciIdentity struct {
	vendor, device, subVendor, subDevice, class, revision uint32
	driver                                                string
}

var (
	rootPortIdentity = pciIdentity{0x8086, 0x352a, 0x8086, 0x0000, 0x060400, 0x04, "pcieport"}
	switchIdentity   = pciIdentity{0x1000, 0xc030, 0x1000, 0xa064, 0x060400, 0xb0, "pcieport"}
	// nvswitchIdentity is an HGX H100 board's third-generation NVSwitch
	// (device 0x22a3, class 0x068000 "other bridge", what go-nvlib's
	// nvpci.GetNVSwitches looks for), bound to the nvidia driver's
	// NVSwitch half.
	nvswitchIdentity = pciIdentity{0x10de, 0x22a3, 0x10de, 0x1796, 0x068000, 0xa1, nvswitchDriver}
)

const nvswitchDriver = "nvidia-nvswitch"

const (
	gpuClass    = 0x030200 // 3D controller, what data-centre GPUs report
	gpuRevision = 0xa1
	gpuDriver   = "nvidia"
)

// BAR layout: each GPU (by its position among the GPUs in PCI order) gets a
// 16 MiB BAR0 in the 32-bit MMIO window from 0x80000000; each endpoint, GPU
// NIC or TPU chip, by its position in PCI order, gets a 2 TiB slot in the 64-bit
// window from 0x200000000000, for a GPU's BAR1 and its 32 MiB BAR3, for a
// NIC's 32 MiB BAR0 and, 64 MiB in, its VFs' BAR0s (1 MiB each, the PF's
// SR-IOV BAR), for a TPU chip its 64 MiB BAR0. Slots in PCI order keep every
// bridge's windows disjoint.
const (
	bar0Base    = 0x80000000
	bar0Size    = 16 << 20
	mmio64Base  = 0x200000000000
	mmio64Slot  = 2 << 40
	bar3Size    = 32 << 20
	nicBAR0Size = 32 << 20
	nicVFOffset = 64 << 20
	vfBAR0Size  = 1 << 20
	flagsBAR0   = 0x40200  // IORESOURCE_MEM | IORESOURCE_SIZEALIGN
	flagsBAR64  = 0x14220c // + IORESOURCE_MEM_64 | IORESOURCE_PREFETCH, 64-bit prefetchable BAR
	flagsWindow = 0x200    // bridge memory window
	flagsPref   = 0x102201 // bridge 64-bit prefetchable window
)

type region struct{ start, end, flags uint64 }

// Resource lines of an endpoint: BAR0-5, the ROM, then the six SR-IOV BARs
// (the kernel's PCI_IOV_RESOURCES); a bridge adds its windows.
const (
	endpointResources = 13
	iovResource       = 7
)

// tree renders the PCI tree, the bus and driver links, the NICs' netdevs and
// RDMA devices, and the NUMA and CPU topology under R/sys.
type tree struct {
	w      *writer // set by render
	p      *profile.Profile
	topo   *profile.Topology
	cpus   map[int][]int // NUMA node id -> CPUs
	allCPU []int
	nrCPUs int
	// bars maps each endpoint to its resource lines (BAR0-5, ROM, IOV BARs).
	bars map[*profile.PCIFunction][endpointResources]region
	// nics numbers the NICs: ifindex and RDMA device of each PF.
	nics map[*profile.PCIFunction]nicNumbers
	// tpuIndex maps each TPU chip's function to its index on the host.
	tpuIndex map[*profile.PCIFunction]int
}

func newTree(p *profile.Profile, topo *profile.Topology) (*tree, error) {
	s := &tree{p: p, topo: topo, cpus: map[int][]int{}, bars: map[*profile.PCIFunction][endpointResources]region{}}
	for _, n := range p.Spec.NUMANodes {
		cpus, err := platform.ParseCPUList(n.CPUList)
		if err != nil {
			return nil, fmt.Errorf("parse cpulist of NUMA node %d: %w", *n.ID, err)
		}
		s.cpus[*n.ID] = cpus
		s.allCPU = append(s.allCPU, cpus...)
		for _, c := range cpus {
			s.nrCPUs = max(s.nrCPUs, c+1)
		}
	}
	s.allCPU = sortedCopy(s.allCPU)
	var endpoints []*profile.PCIFunction
	for _, g := range topo.GPUs {
		endpoints = append(endpoints, g.Function)
	}
	for _, n := range topo.NICs {
		endpoints = append(endpoints, n.Function)
	}
	s.tpuIndex = map[*profile.PCIFunction]int{}
	for _, c := range topo.TPUChips {
		endpoints = append(endpoints, c.Function)
		s.tpuIndex[c.Function] = c.Index
	}
	slices.SortFunc(endpoints, func(a, b *profile.PCIFunction) int {
		return cmp.Or(cmp.Compare(a.Address.Domain, b.Address.Domain), cmp.Compare(a.Address.Bus, b.Address.Bus))
	})
	gpu := 0
	for i, fn := range endpoints {
		slot := uint64(mmio64Base + i*mmio64Slot)
		var r [endpointResources]region
		switch fn.Kind {
		case profile.GPUFunction:
			bar1 := uint64(fn.GPU.BAR1Size.Value())
			r[0] = region{uint64(bar0Base + gpu*bar0Size), uint64(bar0Base+(gpu+1)*bar0Size) - 1, flagsBAR0}
			r[1] = region{slot, slot + bar1 - 1, flagsBAR64}
			r[3] = region{slot + max(bar1, bar3Size), slot + max(bar1, bar3Size) + bar3Size - 1, flagsBAR64}
			gpu++
		case profile.TPUFunction:
			r[0] = region{slot, slot + tpuBAR0Size - 1, flagsBAR64}
		default:
			r[0] = region{slot, slot + nicBAR0Size - 1, flagsBAR64}
			if vfs := uint64(*fn.NIC.TotalVFs); vfs > 0 {
				r[iovResource] = region{slot + nicVFOffset, slot + nicVFOffset + vfs*vfBAR0Size - 1, flagsBAR64}
			}
		}
		s.bars[fn] = r
	}
	// NVSwitches: a 32 MiB BAR0 each, in slots after every GPU's and NIC's,
	// so a profile without NVSwitches keeps its addresses.
	for k, fn := range topo.NVSwitches {
		slot := uint64(mmio64Base + (len(endpoints)+k)*mmio64Slot)
		var r [endpointResources]region
		r[0] = region{slot, slot + nicBAR0Size - 1, flagsBAR64}
		s.bars[fn] = r
	}
	s.nics = numberNICs(topo)
	return s, nil
}

func (s *tree) render(w *writer) {
	s.w = w
	s.w.dir("sys/bus/pci/devices")
	s.w.dir("sys/bus/pci/drivers/" + gpuDriver)
	s.w.dir("sys/bus/pci/drivers/pcieport")
	if len(s.topo.NVSwitches) > 0 {
		s.w.dir("sys/bus/pci/drivers/" + nvswitchDriver)
	}
	s.nicClasses()
	s.tpuClasses()
	for _, hb := range s.topo.HostBridges {
		dir := filepath.Join("sys/devices", hb.Name())
		s.w.file(filepath.Join(dir, "uevent"), 0o644, "")
		for _, rp := range hb.RootPorts {
			s.function(dir, hb, rp)
		}
	}
	s.numa()
}

// function renders fn below parent and recurses into its children.
func (s *tree) function(parent string, hb *profile.HostBridge, fn *profile.PCIFunction) {
	dir := filepath.Join(parent, fn.Address.String())
	id := rootPortIdentity
	switch fn.Kind {
	case profile.SwitchUpstreamPort, profile.SwitchDownstreamPort:
		id = switchIdentity
	case profile.GPUFunction:
		g := fn.GPU
		id = pciIdentity{uint32(g.VendorID), uint32(g.DeviceID), uint32(g.SubsystemVendorID),
			uint32(g.SubsystemDeviceID), gpuClass, gpuRevision, gpuDriver}
	case profile.NICFunction:
		id = nicIdentity(fn.NIC)
	case profile.TPUFunction:
		id = tpuIdentity(tpuGeneration(s.p))
	case profile.NVSwitchFunction:
		id = nvswitchIdentity
	}
	local := s.allCPU
	if hb.NUMANode >= 0 {
		local = s.cpus[hb.NUMANode]
	}
	f := kfs.Function{
		Dir: dir, Address: fn.Address.String(),
		Vendor: id.vendor, Device: id.device, SubVendor: id.subVendor, SubDevice: id.subDevice,
		Class: id.class, Revision: id.revision, Driver: id.driver, NUMANode: hb.NUMANode,
		LocalCPUList: platform.FormatCPUList(local), LocalCPUs: platform.FormatCPUMask(local, s.nrCPUs),
		Resource: s.resource(fn),
	}
	if fn.Kind == profile.RootPort || fn.Kind == profile.SwitchUpstreamPort || fn.Kind == profile.SwitchDownstreamPort {
		f.Bridge, f.SecondaryBus, f.SubordinateBus = true, fn.SecondaryBus, fn.SubordinateBus
	}
	s.w.entries(kfs.PCIFunction(f))
	switch fn.Kind {
	case profile.NICFunction:
		s.nic(dir, fn)
	case profile.TPUFunction:
		s.tpuChip(dir, fn)
	}
	for _, c := range fn.Children {
		s.function(dir, hb, c)
	}
}

// resource is the sysfs resource file: 13 lines (BAR0-5, ROM, 6 SR-IOV
// BARs) for an endpoint, 17 for a bridge (plus I/O, memory, prefetchable
// memory windows and one unused), each "start end flags".
func (s *tree) resource(fn *profile.PCIFunction) string {
	var lines []region
	if b, ok := s.bars[fn]; ok {
		lines = b[:]
	} else {
		lines = make([]region, 17)
		mem, pref := s.windows(fn)
		lines[14], lines[15] = mem, pref
	}
	return formatResource(lines)
}

func formatResource(lines []region) string {
	var out strings.Builder
	for _, r := range lines {
		fmt.Fprintf(&out, "0x%016x 0x%016x 0x%016x\n", r.start, r.end, r.flags)
	}
	return out.String()
}

// windows returns the memory windows a bridge forwards: the span of the
// 32-bit and the 64-bit BARs of the endpoints below it.
func (s *tree) windows(fn *profile.PCIFunction) (mem, pref region) {
	var walk func(*profile.PCIFunction)
	walk = func(f *profile.PCIFunction) {
		if b, ok := s.bars[f]; ok {
			for _, r := range b {
				switch r.flags {
				case flagsBAR0:
					mem = span(mem, r, flagsWindow)
				case flagsBAR64:
					pref = span(pref, r, flagsPref)
				}
			}
		}
		for _, c := range f.Children {
			walk(c)
		}
	}
	walk(fn)
	return mem, pref
}

func span(w, r region, flags uint64) region {
	if w.flags == 0 {
		return region{r.start, r.end, flags}
	}
	return region{min(w.start, r.start), max(w.end, r.end), flags}
}
