package nic

import (
	"crypto/sha256"
	"fmt"

	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/internal/nichw"
)

// NIC is one network adapter, a single-function PCI device (its physical
// function, PF) with SR-IOV. Model names a catalogue entry (see Models);
// every model field left unset takes the model's value, and every field set
// explicitly overrides it. Without a model all model fields are required.
// The emulator renders the PF's netdev in Ethernet mode (link type 1; a
// ConnectX port in InfiniBand mode, with an IPoIB netdev, is not modelled).
type NIC struct {
	// Model is a catalogue name such as "ConnectX-7".
	Model string `json:"model,omitempty"`

	// VendorID, DeviceID, SubsystemVendorID and SubsystemDeviceID are the
	// PF's PCI identifiers (0x0001..0xfffe); the class is always Ethernet
	// controller (0x020000).
	VendorID          platform.Hex `json:"vendorID,omitempty"`
	DeviceID          platform.Hex `json:"deviceID,omitempty"`
	SubsystemVendorID platform.Hex `json:"subsystemVendorID,omitempty"`
	SubsystemDeviceID platform.Hex `json:"subsystemDeviceID,omitempty"`
	// Driver is the PF's kernel driver: mlx5_core or ice (see
	// nichw.Drivers); it also decides the VFs' driver (mlx5_core, iavf).
	Driver string `json:"driver,omitempty"`
	// RDMA says the PF (and each VF) registers an RDMA device with a
	// uverbs character device; mlx5_core only. Default: the model's value,
	// false without a model.
	RDMA *bool `json:"rdma,omitempty"`
	// SpeedMbps is the link speed in Mb/s, the netdev's speed file while
	// the link is up (400000 for 400 Gb/s).
	SpeedMbps int `json:"speedMbps,omitempty"`
	// TotalVFs is sriov_totalvfs, the most VFs the PF can enable; 0 means
	// the PF has no SR-IOV capability (no sriov_* files). Default: the
	// model's value, 0 without a model.
	TotalVFs *int `json:"totalVFs,omitempty"`
	// VFDeviceID is sriov_vf_device, the VFs' PCI device id; required with
	// totalVFs.
	VFDeviceID platform.Hex `json:"vfDeviceID,omitempty"`
	// VFOffset and VFStride are sriov_offset and sriov_stride: VF i sits at
	// routing id PF + offset + i·stride (nichw.VFAddress). Every VF must
	// stay on the PF's bus. Required with totalVFs.
	VFOffset *int `json:"vfOffset,omitempty"`
	VFStride *int `json:"vfStride,omitempty"`

	// Interface is the PF's netdev name, /sys/class/net/<interface>.
	// Default: systemd-udevd's path name of the PF (nichw.PathName),
	// en[P<domain>]p<bus>s0np0 with the bus in decimal, e.g. enp12s0np0
	// for bus 0x0c.
	Interface string `json:"interface,omitempty"`
	// MAC is the PF's permanent address, six lower-case hex bytes separated
	// by colons, unicast. Default: derived from spec.uuidSeed and the PF's
	// PCI address (DeriveMAC).
	MAC string `json:"mac,omitempty"`
	// MTU is the netdev's MTU, 68..9702. Default 1500.
	MTU int `json:"mtu,omitempty"`
	// Link is the link state at render time, "up" or "down" (operstate,
	// carrier). Default "up".
	Link string `json:"link,omitempty"`
	// PCIe places the PF in the PCIe tree, like a GPU.
	PCIe platform.Placement `json:"pcie"`
}

// Link states of a NIC.
const (
	LinkUp   = "up"
	LinkDown = "down"
)

// Defaults and limits of NIC fields.
const (
	DefaultMTU = 1500
	MinMTU     = 68   // ETH_MIN_MTU
	MaxMTU     = 9702 // ice's largest MTU; mlx5_core's is 9978
	// MaxNICs bounds spec.nics.
	MaxNICs = 64
)

// DeriveMAC derives a NIC's MAC address from a seed and the PF's PCI
// address: five bytes of SHA-256("<seed>/nic/<address>") after 0x02, a
// locally administered unicast address, so that the same profile always
// renders the same addresses and none is a vendor's.
func DeriveMAC(seed string, addr platform.Address) string {
	h := sha256.Sum256([]byte(seed + "/nic/" + addr.String()))
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4])
}

// DefaultInterface is the interface name a NIC gets without one: the
// systemd path name of its PF (nichw.PathName) with the driver's
// phys_port_name.
func DefaultInterface(addr platform.Address, driver string) string {
	d, _ := nichw.LookupDriver(driver)
	return nichw.PathName(nichw.Address(addr), d.PhysPortName)
}

// Default fills a NIC's unset fields, in place: every unset model field
// from the NIC catalogue model (rdma false and totalVFs 0 without a model);
// mtu DefaultMTU; link "up"; once the PF's PCI address below rcs
// (spec.rootComplexes) is known, mac DeriveMAC of seed and (with a driver)
// interface DefaultInterface.
func Default(n *NIC, seed string, rcs []platform.RootComplex) {
	if m, ok := LookupModel(n.Model); ok {
		setHex(&n.VendorID, m.VendorID)
		setHex(&n.DeviceID, m.DeviceID)
		setHex(&n.SubsystemVendorID, m.SubsystemVendorID)
		setHex(&n.SubsystemDeviceID, m.SubsystemDeviceID)
		setString(&n.Driver, m.Driver)
		if n.RDMA == nil {
			n.RDMA = ptr(m.RDMA)
		}
		if n.SpeedMbps == 0 {
			n.SpeedMbps = m.SpeedMbps
		}
		if n.TotalVFs == nil {
			n.TotalVFs = ptr(m.TotalVFs)
		}
		setHex(&n.VFDeviceID, m.VFDeviceID)
		if n.VFOffset == nil {
			n.VFOffset = ptr(m.VFOffset)
		}
		if n.VFStride == nil {
			n.VFStride = ptr(m.VFStride)
		}
	} else if n.Model == "" {
		if n.RDMA == nil {
			n.RDMA = ptr(false)
		}
		if n.TotalVFs == nil {
			n.TotalVFs = ptr(0)
		}
	}
	if n.MTU == 0 {
		n.MTU = DefaultMTU
	}
	setString(&n.Link, LinkUp)
	if addr, ok := platform.PlacementAddress(rcs, n.PCIe); ok {
		setString(&n.MAC, DeriveMAC(seed, addr))
		if n.Driver != "" {
			setString(&n.Interface, DefaultInterface(addr, n.Driver))
		}
	}
}

func setString(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func setHex(dst *platform.Hex, v platform.Hex) {
	if *dst == 0 {
		*dst = v
	}
}

func ptr[T any](v T) *T { return &v }
