package platform

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// NUMANode is one NUMA node as /sys/devices/system/node/node<id> shows it.
type NUMANode struct {
	// ID is the node number; required.
	ID *int `json:"id"`
	// CPUList is the node's CPUs in kernel list format ("0-55,112-167");
	// empty for a memory-only node. Lists of different nodes must not overlap.
	CPUList string `json:"cpulist,omitempty"`
	// Distances is the node's SLIT row, one entry per node in id order: 10 for
	// itself, 11..254 for the others. Default: 10 for itself, 20 for others
	// (the kernel's values when the firmware has no SLIT).
	Distances []int `json:"distances,omitempty"`
	// Socket is the physical package of the node's CPUs
	// (cpu<N>/topology/physical_package_id). Default: the node's id.
	Socket *int `json:"socket,omitempty"`
	// Memory is the node's memory, node<id>/meminfo's MemTotal (a positive
	// whole number of KiB, "512Gi"). Unset: the node has no meminfo file.
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// RootComplex is a PCIe host bridge, /sys/devices/pci<domain>:<bus>.
type RootComplex struct {
	// Name identifies the root complex in placements; a DNS label.
	Name string `json:"name"`
	// Domain is the PCI segment, 0x0000..0xffff. Default 0.
	Domain Hex `json:"domain,omitempty"`
	// Bus is the root bus number, 0x00..0xff. Default 0. Every bus below the
	// root complex must be greater than Bus and smaller than the bus of the
	// next root complex of the same domain.
	Bus Hex `json:"bus,omitempty"`
	// NUMANode is the node the devices below are attached to; it must exist
	// in spec.numaNodes. Unset means no affinity (numa_node -1).
	NUMANode *int `json:"numaNode,omitempty"`
	// Switches are PCIe switches, each attached to its own root port.
	Switches []Switch `json:"switches,omitempty"`
}

// Switch is a PCIe switch: an upstream port on Bus and downstream ports on
// bus Bus+1, one per device placed behind the switch.
type Switch struct {
	// Name identifies the switch within its root complex; a DNS label.
	Name string `json:"name"`
	// Bus is the bus of the upstream port (the secondary bus of its root
	// port); the switch's internal bus is Bus+1. Required.
	Bus Hex `json:"bus"`
}

// Placement is where a PCI endpoint sits: directly on a root port of a root
// complex, or on a downstream port of one of its switches.
type Placement struct {
	// RootComplex names an entry of spec.rootComplexes; required.
	RootComplex string `json:"rootComplex"`
	// Switch names a switch of that root complex; empty attaches the device
	// to its own root port.
	Switch string `json:"switch,omitempty"`
	// Bus is the device's bus number (its function is always <bus>:00.0);
	// required.
	Bus Hex `json:"bus"`
}

// Hex is an unsigned number that YAML may write as 0x10de, "0x10de" or 4318.
// It is written back as a "0x…" string.
type Hex uint32

// String formats h as 0x followed by lower-case hex digits.
func (h Hex) String() string { return fmt.Sprintf("0x%x", uint32(h)) }

// MarshalJSON writes h as a "0x…" string.
func (h Hex) MarshalJSON() ([]byte, error) { return json.Marshal(h.String()) }

// UnmarshalJSON accepts a non-negative integer or a string holding a decimal
// number or a 0x-prefixed hex number.
func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	base := 10
	digits := s
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		base, digits = 16, rest
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return fmt.Errorf("parse number %q: want a decimal or 0x-prefixed hex number up to 0xffffffff", s)
	}
	*h = Hex(n)
	return nil
}

// Address is a PCI function address.
type Address struct {
	Domain, Bus, Device, Function int
}

// String is the kernel's form, "0000:18:00.0": the name of the device's sysfs
// directory and what deviceattribute accepts.
func (a Address) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Device, a.Function)
}

// NVMLBusID is NVML's nvmlPciInfo_t.busId form, "00000000:18:00.0".
func (a Address) NVMLBusID() string {
	return fmt.Sprintf("%08X:%02X:%02X.%X", a.Domain, a.Bus, a.Device, a.Function)
}

// CompareAddress orders addresses by domain, bus, device and function, the
// order the kernel probes PCI functions in.
func CompareAddress(a, b Address) int {
	return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Bus, b.Bus),
		cmp.Compare(a.Device, b.Device), cmp.Compare(a.Function, b.Function))
}
