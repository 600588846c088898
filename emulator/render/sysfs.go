package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/emulator/profile"
)

// PCI identities of the bridges the renderer puts above the GPUs: an Intel
// Xeon (Sapphire Rapids) root port and the ports of a Broadcom PEX89000
// switch, the parts of an HGX H100 board.
type pciIdentity struct {
	vendor, device, subVendor, subDevice, class, revision uint32
	driver                                                string
}

var (
	rootPortIdentity = pciIdentity{0x8086, 0x352a, 0x8086, 0x0000, 0x060400, 0x04, "pcieport"}
	switchIdentity   = pciIdentity{0x1000, 0xc030, 0x1000, 0xa064, 0x060400, 0xb0, "pcieport"}
)

const (
	gpuClass    = 0x030200 // 3D controller, what data-centre GPUs report
	gpuRevision = 0xa1
	gpuDriver   = "nvidia"
)

// BAR layout: each GPU (by its position in PCI order) gets a 16 MiB BAR0 in
// the 32-bit MMIO window from 0x80000000 and a 2 TiB slot in the 64-bit
// window from 0x200000000000 for BAR1 and the 32 MiB BAR3.
const (
	bar0Base    = 0x80000000
	bar0Size    = 16 << 20
	mmio64Base  = 0x200000000000
	mmio64Slot  = 2 << 40
	bar3Size    = 32 << 20
	flagsBAR0   = 0x40200  // IORESOURCE_MEM | IORESOURCE_SIZEALIGN
	flagsBAR64  = 0x14220c // + IORESOURCE_MEM_64 | IORESOURCE_PREFETCH, 64-bit prefetchable BAR
	flagsWindow = 0x200    // bridge memory window
	flagsPref   = 0x102201 // bridge 64-bit prefetchable window
)

type region struct{ start, end, flags uint64 }

// sysfs renders the PCI tree, the bus and driver links, and the NUMA and CPU
// topology under R/sys.
type sysfs struct {
	w      *writer // set by render
	p      *profile.Profile
	topo   *profile.Topology
	cpus   map[int][]int // NUMA node id -> CPUs
	allCPU []int
	nrCPUs int
	// bars maps each GPU function to its BAR0, BAR1 and BAR3 regions.
	bars map[*profile.PCIFunction][3]region
}

func newSysfs(p *profile.Profile, topo *profile.Topology) (*sysfs, error) {
	s := &sysfs{p: p, topo: topo, cpus: map[int][]int{}, bars: map[*profile.PCIFunction][3]region{}}
	for _, n := range p.Spec.NUMANodes {
		cpus, err := profile.ParseCPUList(n.CPUList)
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
	for i, g := range topo.GPUs {
		bar1 := uint64(g.GPU.BAR1Size.Value())
		slot := uint64(mmio64Base + i*mmio64Slot)
		s.bars[g.Function] = [3]region{
			{uint64(bar0Base + i*bar0Size), uint64(bar0Base+(i+1)*bar0Size) - 1, flagsBAR0},
			{slot, slot + bar1 - 1, flagsBAR64},
			{slot + max(bar1, bar3Size), slot + max(bar1, bar3Size) + bar3Size - 1, flagsBAR64},
		}
	}
	return s, nil
}

func (s *sysfs) render(w *writer) {
	s.w = w
	s.w.dir("sys/bus/pci/devices")
	s.w.dir("sys/bus/pci/drivers/" + gpuDriver)
	s.w.dir("sys/bus/pci/drivers/pcieport")
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
func (s *sysfs) function(parent string, hb *profile.HostBridge, fn *profile.PCIFunction) {
	dir := filepath.Join(parent, fn.Address.String())
	id := rootPortIdentity
	switch fn.Kind {
	case profile.SwitchUpstreamPort, profile.SwitchDownstreamPort:
		id = switchIdentity
	case profile.GPUFunction:
		g := fn.GPU
		id = pciIdentity{uint32(g.VendorID), uint32(g.DeviceID), uint32(g.SubsystemVendorID),
			uint32(g.SubsystemDeviceID), gpuClass, gpuRevision, gpuDriver}
	}
	bdf := fn.Address.String()
	modalias := fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		id.vendor, id.device, id.subVendor, id.subDevice, id.class>>16, (id.class>>8)&0xff, id.class&0xff)
	file := func(name string, mode os.FileMode, content string) {
		s.w.file(filepath.Join(dir, name), mode, content)
	}
	file("vendor", 0o444, fmt.Sprintf("0x%04x\n", id.vendor))
	file("device", 0o444, fmt.Sprintf("0x%04x\n", id.device))
	file("subsystem_vendor", 0o444, fmt.Sprintf("0x%04x\n", id.subVendor))
	file("subsystem_device", 0o444, fmt.Sprintf("0x%04x\n", id.subDevice))
	file("class", 0o444, fmt.Sprintf("0x%06x\n", id.class))
	file("revision", 0o444, fmt.Sprintf("0x%02x\n", id.revision))
	file("numa_node", 0o644, fmt.Sprintf("%d\n", hb.NUMANode))
	local := s.allCPU
	if hb.NUMANode >= 0 {
		local = s.cpus[hb.NUMANode]
	}
	file("local_cpulist", 0o444, profile.FormatCPUList(local)+"\n")
	file("local_cpus", 0o444, profile.FormatCPUMask(local, s.nrCPUs)+"\n")
	file("modalias", 0o444, modalias+"\n")
	file("uevent", 0o644, fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n",
		id.driver, id.class, id.vendor, id.device, id.subVendor, id.subDevice, bdf, modalias))
	file("resource", 0o444, s.resource(fn))
	if fn.Kind != profile.GPUFunction {
		file("secondary_bus_number", 0o444, fmt.Sprintf("%d\n", fn.SecondaryBus))
		file("subordinate_bus_number", 0o444, fmt.Sprintf("%d\n", fn.SubordinateBus))
	}
	s.w.link(filepath.Join(dir, "subsystem"), "sys/bus/pci")
	s.w.link(filepath.Join(dir, "driver"), "sys/bus/pci/drivers/"+id.driver)
	s.w.link(filepath.Join("sys/bus/pci/devices", bdf), dir)
	s.w.link(filepath.Join("sys/bus/pci/drivers", id.driver, bdf), dir)
	for _, c := range fn.Children {
		s.function(dir, hb, c)
	}
}

// resource is the sysfs resource file: 13 lines (BAR0-5, ROM, 6 SR-IOV
// BARs) for an endpoint, 17 for a bridge (plus I/O, memory, prefetchable
// memory windows and one unused), each "start end flags".
func (s *sysfs) resource(fn *profile.PCIFunction) string {
	var lines []region
	if fn.Kind == profile.GPUFunction {
		b := s.bars[fn]
		lines = make([]region, 13)
		lines[0], lines[1], lines[3] = b[0], b[1], b[2]
	} else {
		lines = make([]region, 17)
		mem, pref := s.windows(fn)
		lines[14], lines[15] = mem, pref
	}
	var out strings.Builder
	for _, r := range lines {
		fmt.Fprintf(&out, "0x%016x 0x%016x 0x%016x\n", r.start, r.end, r.flags)
	}
	return out.String()
}

// windows returns the memory windows a bridge forwards: the span of the
// 32-bit and the 64-bit BARs of the GPUs below it.
func (s *sysfs) windows(fn *profile.PCIFunction) (mem, pref region) {
	var walk func(*profile.PCIFunction)
	walk = func(f *profile.PCIFunction) {
		if b, ok := s.bars[f]; ok {
			mem = span(mem, b[0], flagsWindow)
			pref = span(span(pref, b[1], flagsPref), b[2], flagsPref)
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

// numa renders /sys/devices/system/node and the parts of
// /sys/devices/system/cpu that map CPUs to nodes and sockets.
func (s *sysfs) numa() {
	nodes := s.p.Spec.NUMANodes
	if len(nodes) == 0 {
		return
	}
	var ids, withCPUs []int
	for _, n := range nodes {
		ids = append(ids, *n.ID)
		if len(s.cpus[*n.ID]) > 0 {
			withCPUs = append(withCPUs, *n.ID)
		}
	}
	ids, withCPUs = sortedCopy(ids), sortedCopy(withCPUs)
	base := "sys/devices/system/node"
	s.w.file(filepath.Join(base, "online"), 0o444, profile.FormatCPUList(ids)+"\n")
	s.w.file(filepath.Join(base, "possible"), 0o444, profile.FormatCPUList(ids)+"\n")
	s.w.file(filepath.Join(base, "has_cpu"), 0o444, profile.FormatCPUList(withCPUs)+"\n")
	for _, n := range nodes {
		dir := filepath.Join(base, fmt.Sprintf("node%d", *n.ID))
		cpus := s.cpus[*n.ID]
		s.w.file(filepath.Join(dir, "cpulist"), 0o444, profile.FormatCPUList(cpus)+"\n")
		s.w.file(filepath.Join(dir, "cpumap"), 0o444, profile.FormatCPUMask(cpus, s.nrCPUs)+"\n")
		dist := make([]string, len(n.Distances))
		for i, d := range n.Distances {
			dist[i] = fmt.Sprint(d)
		}
		s.w.file(filepath.Join(dir, "distance"), 0o444, strings.Join(dist, " ")+"\n")
		for _, c := range cpus {
			cpuDir := filepath.Join("sys/devices/system/cpu", fmt.Sprintf("cpu%d", c))
			s.w.file(filepath.Join(cpuDir, "topology", "physical_package_id"), 0o444, fmt.Sprintf("%d\n", *n.Socket))
			s.w.link(filepath.Join(cpuDir, fmt.Sprintf("node%d", *n.ID)), dir)
		}
	}
	if len(s.allCPU) > 0 {
		list := profile.FormatCPUList(s.allCPU) + "\n"
		for _, name := range []string{"online", "possible", "present"} {
			s.w.file(filepath.Join("sys/devices/system/cpu", name), 0o444, list)
		}
	}
}
