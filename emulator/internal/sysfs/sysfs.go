package sysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/internal/nichw"
)

// Kind is what an Entry creates.
type Kind int

// The kinds of entries.
const (
	File Kind = iota
	Link
	CharDevice
)

// Entry is one thing below an emulator root.
type Entry struct {
	Kind Kind
	// Path is relative to the root, e.g. sys/devices/pci0000:00/…/vendor.
	Path string
	// Mode of a file or character device.
	Mode os.FileMode
	// Content of a file.
	Content string
	// Target of a link, relative to the root; it is written relative to
	// the link's directory, as the kernel writes sysfs links.
	Target string
	// Major and Minor of a character device.
	Major, Minor uint32
}

func file(path string, mode os.FileMode, content string) Entry {
	return Entry{Kind: File, Path: path, Mode: mode, Content: content}
}

func link(path, target string) Entry { return Entry{Kind: Link, Path: path, Target: target} }

// Function is a PCI function: its identity, driver, NUMA affinity and
// resources.
type Function struct {
	// Dir is the function's directory, sys/devices/pci<…>/…/<address>.
	Dir                                                   string
	Address                                               string
	Vendor, Device, SubVendor, SubDevice, Class, Revision uint32
	// Driver is the bound driver, /sys/bus/pci/drivers/<Driver>.
	Driver   string
	NUMANode int
	// LocalCPUList and LocalCPUs are local_cpulist and local_cpus without
	// the newline.
	LocalCPUList, LocalCPUs string
	// Resource is the resource file.
	Resource string
	// Bridge functions have bus numbers.
	Bridge                       bool
	SecondaryBus, SubordinateBus int
}

// Modalias is the function's modalias, the form ghw parses at fixed offsets.
func (f Function) Modalias() string {
	return fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		f.Vendor, f.Device, f.SubVendor, f.SubDevice, f.Class>>16, (f.Class>>8)&0xff, f.Class&0xff)
}

// PCIFunction returns a function's files, its subsystem and driver links,
// and its entries in /sys/bus/pci/devices and /sys/bus/pci/drivers/<driver>.
func PCIFunction(f Function) []Entry {
	in := func(name string) string { return filepath.Join(f.Dir, name) }
	modalias := f.Modalias()
	es := []Entry{
		file(in("vendor"), 0o444, fmt.Sprintf("0x%04x\n", f.Vendor)),
		file(in("device"), 0o444, fmt.Sprintf("0x%04x\n", f.Device)),
		file(in("subsystem_vendor"), 0o444, fmt.Sprintf("0x%04x\n", f.SubVendor)),
		file(in("subsystem_device"), 0o444, fmt.Sprintf("0x%04x\n", f.SubDevice)),
		file(in("class"), 0o444, fmt.Sprintf("0x%06x\n", f.Class)),
		file(in("revision"), 0o444, fmt.Sprintf("0x%02x\n", f.Revision)),
		file(in("numa_node"), 0o644, fmt.Sprintf("%d\n", f.NUMANode)),
		file(in("local_cpulist"), 0o444, f.LocalCPUList+"\n"),
		file(in("local_cpus"), 0o444, f.LocalCPUs+"\n"),
		file(in("modalias"), 0o444, modalias+"\n"),
		file(in("uevent"), 0o644, fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n",
			f.Driver, f.Class, f.Vendor, f.Device, f.SubVendor, f.SubDevice, f.Address, modalias)),
		file(in("resource"), 0o444, f.Resource),
	}
	if f.Bridge {
		es = append(es,
			file(in("secondary_bus_number"), 0o444, fmt.Sprintf("%d\n", f.SecondaryBus)),
			file(in("subordinate_bus_number"), 0o444, fmt.Sprintf("%d\n", f.SubordinateBus)))
	}
	return append(es,
		link(in("subsystem"), "sys/bus/pci"),
		link(in("driver"), "sys/bus/pci/drivers/"+f.Driver),
		link(filepath.Join("sys/bus/pci/devices", f.Address), f.Dir),
		link(filepath.Join("sys/bus/pci/drivers", f.Driver, f.Address), f.Dir))
}

// PCIFunctionLinks are the entries of PCIFunction that live outside the
// function's directory: what to remove, with the directory, to remove it.
func PCIFunctionLinks(f Function) []string {
	return []string{filepath.Join("sys/bus/pci/devices", f.Address), filepath.Join("sys/bus/pci/drivers", f.Driver, f.Address)}
}

// SRIOV is a physical function's SR-IOV capability as sysfs shows it.
type SRIOV struct {
	TotalVFs, NumVFs, Offset, Stride int
	VFDevice                         uint32
}

// SRIOVFiles returns a PF's sriov_* files in dir.
func SRIOVFiles(dir string, s SRIOV) []Entry {
	in := func(name string) string { return filepath.Join(dir, name) }
	return []Entry{
		file(in("sriov_totalvfs"), 0o444, fmt.Sprintf("%d\n", s.TotalVFs)),
		file(in("sriov_numvfs"), 0o644, fmt.Sprintf("%d\n", s.NumVFs)),
		file(in("sriov_offset"), 0o444, fmt.Sprintf("%d\n", s.Offset)),
		file(in("sriov_stride"), 0o444, fmt.Sprintf("%d\n", s.Stride)),
		file(in("sriov_vf_device"), 0o444, fmt.Sprintf("%x\n", s.VFDevice)),
		file(in("sriov_drivers_autoprobe"), 0o644, "1\n"),
	}
}

// NetDev is a network interface of a PCI function.
type NetDev struct {
	// DeviceDir is the PCI function's directory; the interface is
	// DeviceDir/net/<Name>.
	DeviceDir string
	Name      string
	// MAC is the address, aa:bb:cc:dd:ee:ff.
	MAC       string
	MTU       int
	SpeedMbps int
	Up        bool
	IfIndex   int
	// PhysPortName is phys_port_name; empty: no such file (the read fails
	// with EOPNOTSUPP on a real kernel).
	PhysPortName string
}

// Dir is the interface's directory.
func (n NetDev) Dir() string { return filepath.Join(n.DeviceDir, "net", n.Name) }

// ClassLink is /sys/class/net/<name>.
func (n NetDev) ClassLink() string { return filepath.Join("sys/class/net", n.Name) }

// Interface flags (include/uapi/linux/if.h) of an administratively up
// Ethernet interface: IFF_UP|IFF_BROADCAST|IFF_MULTICAST.
const upFlags = 0x1003

// NetDevice returns an Ethernet interface's files, its device and subsystem
// links and /sys/class/net/<name>.
func NetDevice(n NetDev) []Entry {
	dir := n.Dir()
	in := func(name string) string { return filepath.Join(dir, name) }
	es := []Entry{
		file(in("address"), 0o444, n.MAC+"\n"),
		file(in("perm_addr"), 0o444, n.MAC+"\n"),
		file(in("addr_len"), 0o444, "6\n"),
		file(in("addr_assign_type"), 0o444, "0\n"),
		file(in("broadcast"), 0o444, "ff:ff:ff:ff:ff:ff\n"),
		file(in("mtu"), 0o644, fmt.Sprintf("%d\n", n.MTU)),
		file(in("ifindex"), 0o444, fmt.Sprintf("%d\n", n.IfIndex)),
		file(in("iflink"), 0o444, fmt.Sprintf("%d\n", n.IfIndex)),
		file(in("type"), 0o444, fmt.Sprintf("%d\n", nichw.ARPHRDEther)),
		file(in("dev_id"), 0o444, "0x0\n"),
		file(in("dev_port"), 0o444, "0\n"),
		file(in("flags"), 0o644, fmt.Sprintf("0x%x\n", upFlags)),
		file(in("tx_queue_len"), 0o644, "1000\n"),
		file(in("uevent"), 0o644, fmt.Sprintf("INTERFACE=%s\nIFINDEX=%d\n", n.Name, n.IfIndex)),
		link(in("device"), n.DeviceDir),
		link(in("subsystem"), "sys/class/net"),
		link(n.ClassLink(), dir),
	}
	if n.PhysPortName != "" {
		es = append(es, file(in("phys_port_name"), 0o444, n.PhysPortName+"\n"))
	}
	return append(es, LinkFiles(dir, n.Up, n.SpeedMbps)...)
}

// LinkFiles are the files of the interface directory dir that follow its
// link (carrier) state: operstate up or down, carrier 1 or 0, speed in Mb/s
// or -1 (SPEED_UNKNOWN, what drivers report without a link), duplex full or
// unknown. The interface stays administratively up (flags).
func LinkFiles(dir string, up bool, speedMbps int) []Entry {
	in := func(name string) string { return filepath.Join(dir, name) }
	state, carrier, speed, duplex := "down", "0", "-1", "unknown"
	if up {
		state, carrier, speed, duplex = "up", "1", fmt.Sprint(speedMbps), "full"
	}
	return []Entry{
		file(in("operstate"), 0o444, state+"\n"),
		file(in("carrier"), 0o644, carrier+"\n"),
		file(in("speed"), 0o444, speed+"\n"),
		file(in("duplex"), 0o444, duplex+"\n"),
	}
}

// RDMA is an RDMA device of a PCI function with its verbs device.
type RDMA struct {
	DeviceDir string
	// Name is the RDMA device, mlx5_<n>.
	Name string
	// Uverbs is the N of uverbs<N>.
	Uverbs int
	// PCIDevice is the function's PCI device id: hca_type is MT<id in
	// decimal>, as mlx5_ib reports it (MT4129 for a ConnectX-7).
	PCIDevice uint32
	// MAC is the netdev's address; the node GUID is derived from it
	// (EUI-64: ff:fe in the middle).
	MAC string
	// NetDev is the port's netdev (ports/1/gid_attrs/ndevs/0).
	NetDev    string
	Up        bool
	SpeedMbps int
}

// Dir is the RDMA device's directory.
func (r RDMA) Dir() string { return filepath.Join(r.DeviceDir, "infiniband", r.Name) }

// UverbsDir is the verbs device's directory.
func (r RDMA) UverbsDir() string {
	return filepath.Join(r.DeviceDir, "infiniband_verbs", fmt.Sprintf("uverbs%d", r.Uverbs))
}

// UverbsNode is /dev/infiniband/uverbs<N>.
func (r RDMA) UverbsNode() string { return fmt.Sprintf("dev/infiniband/uverbs%d", r.Uverbs) }

// ClassLinks are /sys/class/infiniband/<name> and
// /sys/class/infiniband_verbs/uverbs<N>.
func (r RDMA) ClassLinks() []string {
	return []string{filepath.Join("sys/class/infiniband", r.Name), filepath.Join("sys/class/infiniband_verbs", fmt.Sprintf("uverbs%d", r.Uverbs))}
}

// RDMADevice returns an RDMA device in Ethernet (RoCE) mode with one port,
// its verbs device and character device, and their class links, as mlx5_ib
// and ib_uverbs create them (the files rdmamap and RDMA-aware DRA drivers
// read).
func RDMADevice(r RDMA) []Entry {
	dir, vdir := r.Dir(), r.UverbsDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	guid := nodeGUID(r.MAC)
	major, minor := nichw.UverbsDevice(r.Uverbs)
	es := []Entry{
		file(in("node_type"), 0o444, "1: CA\n"),
		file(in("node_guid"), 0o444, guid+"\n"),
		file(in("sys_image_guid"), 0o444, guid+"\n"),
		file(in("hca_type"), 0o444, fmt.Sprintf("MT%d\n", r.PCIDevice)),
		file(in("ports/1/link_layer"), 0o444, "Ethernet\n"),
		file(in("ports/1/gid_attrs/ndevs/0"), 0o444, r.NetDev+"\n"),
		link(in("device"), r.DeviceDir),
		link(in("subsystem"), "sys/class/infiniband"),
		file(filepath.Join(vdir, "ibdev"), 0o444, r.Name+"\n"),
		file(filepath.Join(vdir, "abi_version"), 0o444, fmt.Sprintf("%d\n", nichw.IBUverbsDevABIVersion)),
		file(filepath.Join(vdir, "dev"), 0o444, fmt.Sprintf("%d:%d\n", major, minor)),
		link(filepath.Join(vdir, "device"), r.DeviceDir),
		link(filepath.Join(vdir, "subsystem"), "sys/class/infiniband_verbs"),
		{Kind: CharDevice, Path: r.UverbsNode(), Mode: 0o666, Major: major, Minor: minor},
	}
	links := r.ClassLinks()
	es = append(es, link(links[0], dir), link(links[1], vdir))
	return append(es, PortFiles(dir, r.Up, r.SpeedMbps)...)
}

// PortFiles are the files of port 1 of the RDMA device directory dir that
// follow the link: state 4: ACTIVE or 1: DOWN, phys_state 5: LinkUp or 3:
// Disabled, and rate.
func PortFiles(dir string, up bool, speedMbps int) []Entry {
	in := func(name string) string { return filepath.Join(dir, "ports/1", name) }
	state, phys, rate := "1: DOWN", "3: Disabled", "10 Gb/sec (4X SDR)"
	if up {
		state, phys, rate = "4: ACTIVE", "5: LinkUp", fmt.Sprintf("%d Gb/sec (%s)", speedMbps/1000, width(speedMbps))
	}
	return []Entry{
		file(in("state"), 0o444, state+"\n"),
		file(in("phys_state"), 0o444, phys+"\n"),
		file(in("rate"), 0o444, rate+"\n"),
	}
}

// width is the lanes and signalling ib_query_port reports for an Ethernet
// port of the speed (the kernel prints rate as "<Gb/s> Gb/sec (<width>
// <speed>)").
func width(speedMbps int) string {
	switch {
	case speedMbps >= 400000:
		return "4X NDR"
	case speedMbps >= 200000:
		return "4X HDR"
	case speedMbps >= 100000:
		return "4X EDR"
	}
	return "1X"
}

// nodeGUID is the EUI-64 of a MAC, as four groups of two bytes.
func nodeGUID(mac string) string {
	b := strings.Split(mac, ":")
	if len(b) != 6 {
		return "0000:0000:0000:0000"
	}
	return fmt.Sprintf("%s%s:%sff:fe%s:%s%s", b[0], b[1], b[2], b[3], b[4], b[5])
}

// SpeedRecord is where the emulator keeps a NIC function's nominal link
// speed (Mb/s, one line) below the root, since the netdev's speed file reads
// -1 while the link is down: run/drakit-emulator/nic/<address>/speed_mbps.
// The renderer writes it for each PF, emulator/sriov for each VF it creates
// (and removes it with the VF); emulator/fault reads it to bring a link up.
func SpeedRecord(address string) string {
	return filepath.Join("run/drakit-emulator/nic", address, "speed_mbps")
}

// SpeedRecordFile is the SpeedRecord entry of a function.
func SpeedRecordFile(address string, speedMbps int) Entry {
	return file(SpeedRecord(address), 0o644, fmt.Sprintf("%d\n", speedMbps))
}
