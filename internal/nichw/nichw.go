package nichw

import (
	"fmt"
	"strings"
)

// PCI vendor ids (pci.ids).
const (
	VendorMellanox = 0x15b3
	VendorIntel    = 0x8086
)

// ClassEthernet is the PCI class code of an Ethernet controller (base class
// 0x02 network, subclass 0x00 Ethernet, prog-if 0x00), what ConnectX and E810
// functions, physical and virtual, report in their class file.
const ClassEthernet = 0x020000

// PCI device ids of the adapters the emulator models (pci.ids; the kernel
// drivers' id tables: mlx5_core's mlx5_core_pci_table, ice's ice_pci_tbl,
// iavf's iavf_pci_tbl).
const (
	DeviceConnectX6   = 0x101b // MT28908 Family [ConnectX-6]
	DeviceConnectX6VF = 0x101c // MT28908 Family [ConnectX-6 Virtual Function]
	DeviceConnectX7   = 0x1021 // MT2910 Family [ConnectX-7]
	DeviceConnectX7VF = 0x101e // ConnectX Family mlx5Gen Virtual Function
	DeviceE810C       = 0x1592 // Ethernet Controller E810-C for QSFP
	DeviceAdaptiveVF  = 0x1889 // Ethernet Adaptive Virtual Function (iavf)
)

// Kernel drivers of the modelled adapters: the name of
// /sys/bus/pci/drivers/<name>.
const (
	DriverMLX5 = "mlx5_core" // ConnectX physical and virtual functions
	DriverIce  = "ice"       // E810 physical functions
	DriverIAVF = "iavf"      // E810 (and X710) virtual functions
)

// Driver is what a NIC's kernel driver does that sysfs shows.
type Driver struct {
	// Name is the PF driver, /sys/bus/pci/drivers/<Name>.
	Name string
	// VFDriver binds the virtual functions the PF creates (sriov_drivers_autoprobe 1).
	VFDriver string
	// RDMAPrefix names the RDMA devices the driver registers,
	// /sys/class/infiniband/<RDMAPrefix><N>, with N the lowest free
	// number; empty for drivers whose RDMA the emulator does not model
	// (ice's RDMA is the separate irdma driver).
	RDMAPrefix string
	// PhysPortName is the netdev's phys_port_name of a single-port PF:
	// mlx5_core and ice register a devlink port per PF, "p<port>", which
	// systemd-udevd appends as "n<phys_port_name>" (enp12s0np0). VF netdevs
	// have none.
	PhysPortName string
}

// Drivers lists the NIC drivers the emulator models.
var Drivers = map[string]Driver{
	DriverMLX5: {Name: DriverMLX5, VFDriver: DriverMLX5, RDMAPrefix: "mlx5_", PhysPortName: "p0"},
	DriverIce:  {Name: DriverIce, VFDriver: DriverIAVF, PhysPortName: "p0"},
}

// LookupDriver returns the facts of the PF driver called name.
func LookupDriver(name string) (Driver, bool) {
	d, ok := Drivers[name]
	return d, ok
}

// RDMA verbs character devices: /dev/infiniband/uverbs<N> is
// UverbsMajor:UverbsBaseMinor+N (include/rdma/ib_verbs.h IB_UVERBS_MAJOR,
// drivers/infiniband/core/uverbs_main.c IB_UVERBS_BASE_MINOR), for the
// first UverbsMaxFixed devices; /proc/devices lists the major as
// "infiniband_verbs". rdma-core's udev rules make the nodes 0666.
const (
	UverbsMajor     = 231
	UverbsBaseMinor = 192
	UverbsMaxFixed  = 32
	UverbsProcName  = "infiniband_verbs"
	// UverbsABIVersion is /sys/class/infiniband_verbs/abi_version and
	// IBUverbsDevABIVersion each uverbs device's abi_version.
	UverbsABIVersion      = 6
	IBUverbsDevABIVersion = 1
)

// Netdev link types (include/uapi/linux/if_arp.h), the type file of
// /sys/class/net/<if>: dra-driver-sriov reads 1 as Ethernet, 32 as
// InfiniBand.
const (
	ARPHRDEther      = 1
	ARPHRDInfiniband = 32
)

// Address is a PCI function address.
type Address struct {
	Domain, Bus, Device, Function int
}

// String is the kernel's form, "0000:0c:00.1".
func (a Address) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Device, a.Function)
}

// ParseAddress parses the kernel's form of a PCI function address,
// "dddd:bb:dd.f" in lower-case hex, as deviceattribute accepts it.
func ParseAddress(s string) (Address, error) {
	var a Address
	var tail string
	n, err := fmt.Sscanf(s, "%04x:%02x:%02x.%1x%s", &a.Domain, &a.Bus, &a.Device, &a.Function, &tail)
	if (err != nil && n != 4) || len(s) != 12 || s != strings.ToLower(s) || a.Device > 31 || a.Function > 7 {
		return Address{}, fmt.Errorf("PCI address %q: want dddd:bb:dd.f in lower-case hex, device 00..1f, function 0..7", s)
	}
	return a, nil
}

// VFAddress is the address of virtual function i (0-based) of the physical
// function pf whose SR-IOV capability has First VF Offset offset and VF
// Stride stride: the routing id (bus<<8 | device<<3 | function) of VF i is
// the PF's plus offset + i·stride (PCIe Base Specification, "SR-IOV
// Extended Capability"; the kernel's pci_iov_virtfn_bus/devfn). ok is false
// when the routing id leaves the bus range 0..255.
func VFAddress(pf Address, offset, stride, i int) (Address, bool) {
	rid := pf.Bus<<8 | pf.Device<<3 | pf.Function
	rid += offset + i*stride
	if rid > 0xffff {
		return Address{}, false
	}
	return Address{Domain: pf.Domain, Bus: rid >> 8, Device: (rid >> 3) & 0x1f, Function: rid & 7}, true
}

// PathName is the name systemd-udevd's net_id builtin gives a PCI network
// function under its "path" policy (ID_NET_NAME_PATH, the name used when the
// firmware reports no onboard index or slot): "en", "P<domain>" when the
// domain is not 0, "p<bus>s<device>", "f<function>" when the function is
// not 0, and "n<phys_port_name>" when the netdev has one, numbers in
// decimal: 0000:0c:00.0 with phys_port_name p0 is enp12s0np0, the virtual
// function 0000:0c:00.1 is enp12s0f1 (systemd.net-naming-scheme(7)). The
// multi-function rule (f0 on a device with several functions) does not
// apply: the emulator's NICs are single-function devices, whose VFs do not
// make them multi-function.
func PathName(a Address, physPortName string) string {
	var b strings.Builder
	b.WriteString("en")
	if a.Domain != 0 {
		fmt.Fprintf(&b, "P%d", a.Domain)
	}
	fmt.Fprintf(&b, "p%ds%d", a.Bus, a.Device)
	if a.Function != 0 {
		fmt.Fprintf(&b, "f%d", a.Function)
	}
	if physPortName != "" {
		b.WriteString("n" + physPortName)
	}
	return b.String()
}

// MaxInterfaceName is the longest netdev name: IFNAMSIZ (16) less the NUL.
const MaxInterfaceName = 15

// ValidInterfaceName reports why name is not a netdev name the kernel
// accepts (net/core/dev.c dev_valid_name): empty, longer than 15 bytes, "."
// or "..", or containing '/', ':' or white space; "" when it is valid.
func ValidInterfaceName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxInterfaceName:
		return fmt.Sprintf("must be at most %d bytes (IFNAMSIZ)", MaxInterfaceName)
	case name == "." || name == "..":
		return `must not be "." or ".."`
	case strings.ContainsAny(name, "/: \t\n\v\f\r"):
		return "must not contain '/', ':' or white space"
	}
	return ""
}

// UverbsDynamicMajor is the major of the uverbs devices past the fixed
// range: ib_uverbs allocates a second, dynamic major at load
// (alloc_chrdev_region, also named infiniband_verbs in /proc/devices),
// whose number the kernel picks; the emulator fixes it to this value.
const UverbsDynamicMajor = 240

// UverbsDevice returns the device number of /dev/infiniband/uverbs<n>:
// 231:192+n for the first 32, then UverbsDynamicMajor:n-32.
func UverbsDevice(n int) (major, minor uint32) {
	if n < UverbsMaxFixed {
		return UverbsMajor, uint32(UverbsBaseMinor + n)
	}
	return UverbsDynamicMajor, uint32(n - UverbsMaxFixed)
}
