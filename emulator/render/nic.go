package render

import (
	"fmt"

	kfs "drakit.dev/drakit/emulator/internal/sysfs"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/internal/nichw"
)

// nicRevision is the PCI revision the emulator gives NIC functions.
const nicRevision = 0x00

// firstIfIndex is the first NIC's interface index: 1 is the loopback
// interface, which every network namespace has (not rendered).
const firstIfIndex = 2

func nicIdentity(n *nic.NIC) pciIdentity {
	return pciIdentity{uint32(n.VendorID), uint32(n.DeviceID), uint32(n.SubsystemVendorID),
		uint32(n.SubsystemDeviceID), nichw.ClassEthernet, nicRevision, n.Driver}
}

// nicNumbers are what the kernel numbers as it probes a NIC: its interface
// index and, for an RDMA NIC, its RDMA device (<prefix><n>) and verbs
// device (uverbs<n>).
type nicNumbers struct {
	ifIndex int
	rdma    int // -1 without RDMA
}

// numberNICs numbers the NICs in PCI order, the order the kernel probes
// them: interface indexes from firstIfIndex, RDMA and verbs devices from 0.
func numberNICs(topo *profile.Topology) map[*profile.PCIFunction]nicNumbers {
	out := map[*profile.PCIFunction]nicNumbers{}
	rdma := 0
	for i, pn := range topo.NICs {
		n := nicNumbers{ifIndex: firstIfIndex + i, rdma: -1}
		if *pn.NIC.RDMA {
			n.rdma = rdma
			rdma++
		}
		out[pn.Function] = n
	}
	return out
}

// hasRDMA reports whether a NIC of the topology registers an RDMA device.
func hasRDMA(topo *profile.Topology) bool {
	for _, n := range topo.NICs {
		if *n.NIC.RDMA {
			return true
		}
	}
	return false
}

// nicClasses renders the driver directories of the NICs' drivers and the
// class directories a NIC driver creates, even with no device in them.
func (s *tree) nicClasses() {
	if len(s.topo.NICs) == 0 {
		return
	}
	s.w.dir("sys/class/net")
	for _, n := range s.topo.NICs {
		d, _ := nichw.LookupDriver(n.NIC.Driver)
		s.w.dir("sys/bus/pci/drivers/" + d.Name)
		if *n.NIC.TotalVFs > 0 {
			s.w.dir("sys/bus/pci/drivers/" + d.VFDriver)
		}
	}
	if hasRDMA(s.topo) {
		s.w.dir("sys/class/infiniband")
		s.w.file("sys/class/infiniband_verbs/abi_version", 0o444, fmt.Sprintf("%d\n", nichw.UverbsABIVersion))
		s.w.dir("dev/infiniband")
	}
}

// nic renders a NIC's physical function beyond its PCI files: its SR-IOV
// capability (sriov_numvfs 0: no VFs at render), its netdev and, for an
// RDMA NIC, its RDMA device and verbs character device.
func (s *tree) nic(dir string, fn *profile.PCIFunction) {
	n := fn.NIC
	num := s.nics[fn]
	if *n.TotalVFs > 0 {
		s.w.entries(kfs.SRIOVFiles(dir, kfs.SRIOV{TotalVFs: *n.TotalVFs, Offset: *n.VFOffset, Stride: *n.VFStride,
			VFDevice: uint32(n.VFDeviceID)}))
	}
	d, _ := nichw.LookupDriver(n.Driver)
	up := n.Link == nic.LinkUp
	s.w.entries(kfs.NetDevice(kfs.NetDev{DeviceDir: dir, Name: n.Interface, MAC: n.MAC, MTU: n.MTU,
		SpeedMbps: n.SpeedMbps, Up: up, IfIndex: num.ifIndex, PhysPortName: d.PhysPortName}))
	s.w.entries([]kfs.Entry{kfs.SpeedRecordFile(fn.Address.String(), n.SpeedMbps)})
	if num.rdma >= 0 {
		s.w.entries(kfs.RDMADevice(kfs.RDMA{DeviceDir: dir, Name: fmt.Sprintf("%s%d", d.RDMAPrefix, num.rdma),
			Uverbs: num.rdma, PCIDevice: uint32(n.DeviceID), MAC: n.MAC, NetDev: n.Interface, Up: up, SpeedMbps: n.SpeedMbps}))
	}
}
