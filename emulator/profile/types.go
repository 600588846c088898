package profile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// APIVersion and Kind identify a node profile document.
const (
	APIVersion = "emulator.drakit.dev/v1alpha1"
	Kind       = "NodeProfile"
)

// Profile is one emulated node: its NVIDIA driver, NUMA layout, PCIe root
// complexes and the GPUs and NICs placed on them.
type Profile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the profile.
type Metadata struct {
	// Name is a DNS label; it is also the default UUID seed.
	Name string `json:"name"`
}

// Spec is the hardware of the node.
type Spec struct {
	// UUIDSeed makes derived GPU UUIDs reproducible; defaults to metadata.name.
	UUIDSeed string `json:"uuidSeed,omitempty"`
	// Driver is the emulated NVIDIA kernel driver and its NVML/CUDA versions.
	Driver Driver `json:"driver"`
	// NUMANodes are the node's NUMA nodes; ids must be 0..n-1.
	NUMANodes []NUMANode `json:"numaNodes,omitempty"`
	// RootComplexes are the PCIe host bridges (pci<domain>:<bus>).
	RootComplexes []RootComplex `json:"rootComplexes,omitempty"`
	// GPUs are the NVIDIA GPUs, each placed below a root complex.
	GPUs []GPU `json:"gpus,omitempty"`
	// NICs are the network adapters (SR-IOV physical functions), placed
	// like GPUs, on the same buses' numbering (nic.go).
	NICs []NIC `json:"nics,omitempty"`
}

// Driver is the node-level NVIDIA driver.
type Driver struct {
	// DriverVersion is what nvmlSystemGetDriverVersion returns and the suffix
	// of libnvidia-ml.so.<version>, e.g. 570.172.08. Default DefaultDriverVersion.
	DriverVersion string `json:"driverVersion,omitempty"`
	// CUDADriverVersion is nvmlSystemGetCudaDriverVersion: major*1000 +
	// minor*10, e.g. 12080 for CUDA 12.8. Default DefaultCUDADriverVersion.
	CUDADriverVersion int `json:"cudaDriverVersion,omitempty"`
}

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

// GPU is one NVIDIA GPU. Model names a catalogue entry (see Models); every
// model field left unset takes the model's value, and every field set
// explicitly overrides it. Without a model all model fields are required.
type GPU struct {
	// Model is a catalogue name such as "H100-80GB-HBM3".
	Model string `json:"model,omitempty"`

	// Name is nvmlDeviceGetName, at most 95 bytes.
	Name string `json:"name,omitempty"`
	// VendorID, DeviceID, SubsystemVendorID and SubsystemDeviceID are the
	// PCI identifiers (0x0001..0xfffe).
	VendorID          Hex `json:"vendorID,omitempty"`
	DeviceID          Hex `json:"deviceID,omitempty"`
	SubsystemVendorID Hex `json:"subsystemVendorID,omitempty"`
	SubsystemDeviceID Hex `json:"subsystemDeviceID,omitempty"`
	// Memory is the framebuffer size in bytes (a quantity: 85520809984 or 81559Mi).
	Memory *resource.Quantity `json:"memory,omitempty"`
	// MemoryReserved is framebuffer memory the driver keeps (NVML "reserved").
	MemoryReserved *resource.Quantity `json:"memoryReserved,omitempty"`
	// BAR1Size is the size of the BAR1 aperture; a power of two.
	BAR1Size *resource.Quantity `json:"bar1Size,omitempty"`
	// Architecture is the NVML architecture name (see Architectures).
	Architecture Architecture `json:"architecture,omitempty"`
	// Brand is the NVML brand name (see Brands).
	Brand Brand `json:"brand,omitempty"`
	// ComputeCapability is the CUDA compute capability "MAJOR.MINOR"; quote
	// it in YAML ("9.0"), a bare 9.0 is a number.
	ComputeCapability string `json:"computeCapability,omitempty"`
	// MIGCapable says whether the GPU supports MIG. Default: the model's
	// value, false without a model.
	MIGCapable *bool `json:"migCapable,omitempty"`
	// VBIOSVersion is the video BIOS version, e.g. 96.00.99.00.01.
	VBIOSVersion string `json:"vbiosVersion,omitempty"`

	// Minor is the device minor, /dev/nvidia<minor>; 0..254, required.
	Minor *int `json:"minor"`
	// UUID is GPU-<8>-<4>-<4>-<4>-<12> in lower-case hex. Default: derived
	// from spec.uuidSeed and the GPU's PCI address (DeriveUUID).
	UUID string `json:"uuid,omitempty"`
	// PCIe places the GPU in the PCIe tree.
	PCIe Placement `json:"pcie"`
	// MIG is the GPU's MIG mode and static layout; unset means MIG disabled.
	// Only MIG-capable catalogue models with MIG tables accept it.
	MIG *MIGConfig `json:"mig,omitempty"`
}

// MIG modes.
const (
	MIGEnabled  = "enabled"
	MIGDisabled = "disabled"
)

// MIGConfig is a GPU's MIG mode and the GPU instances that exist when the
// node starts (a static layout). Layout and Instances are mutually
// exclusive; with neither, MIG is enabled (or disabled) with no instances,
// which is what dynamic MIG starts from.
type MIGConfig struct {
	// Mode is "enabled" or "disabled". Default: "disabled" for layout
	// all-disabled, "enabled" otherwise.
	Mode string `json:"mode,omitempty"`
	// Layout names a layout from NVIDIA mig-parted's vocabulary (see
	// MIGLayouts): all-disabled, all-enabled, all-balanced or
	// all-<GI profile>.
	Layout string `json:"layout,omitempty"`
	// Instances lists the GPU instances explicitly.
	Instances []MIGInstance `json:"instances,omitempty"`
}

// MIGInstance is one GPU instance of a static layout.
type MIGInstance struct {
	// Profile is a GI profile name of the GPU's model, e.g. "3g.20gb".
	Profile string `json:"profile"`
	// Placement is the start memory slice; it must be one of the profile's
	// placements. Required.
	Placement *int `json:"placement"`
	// ComputeInstances are the GI's compute instances. Default: one CI
	// spanning the whole GI (profile = the GI profile's name, placement 0).
	ComputeInstances []MIGComputeInstance `json:"computeInstances,omitempty"`
}

// MIGComputeInstance is one compute instance inside a GPU instance.
type MIGComputeInstance struct {
	// Profile is a CI profile name: "<c>c.<GI profile>" or the GI profile's
	// own name for the CI spanning the whole GI.
	Profile string `json:"profile"`
	// Placement is the start compute slice inside the GI. Required.
	Placement *int `json:"placement"`
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

// Architecture is an NVML device architecture name.
type Architecture string

var architectures = map[Architecture]int{
	"Kepler": 2, "Maxwell": 3, "Pascal": 4, "Volta": 5, "Turing": 6,
	"Ampere": 7, "Ada": 8, "Hopper": 9, "Blackwell": 10,
}

// Architectures lists the accepted architecture names in NVML order.
func Architectures() []Architecture {
	return []Architecture{"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"}
}

// NVML returns the nvmlDeviceArchitecture_t value (NVML_DEVICE_ARCH_*).
func (a Architecture) NVML() (int, bool) {
	v, ok := architectures[a]
	return v, ok
}

// Brand is an NVML brand name.
type Brand string

var brands = map[Brand]int{
	"Quadro": 1, "Tesla": 2, "NVS": 3, "GeForce": 5, "Titan": 6,
	"Quadro RTX": 12, "NVIDIA RTX": 13, "NVIDIA": 14, "GeForce RTX": 15, "Titan RTX": 16,
}

// Brands lists the accepted brand names in NVML order.
func Brands() []Brand {
	return []Brand{"Quadro", "Tesla", "NVS", "GeForce", "Titan", "Quadro RTX", "NVIDIA RTX", "NVIDIA", "GeForce RTX", "Titan RTX"}
}

// NVML returns the nvmlBrandType_t value (NVML_BRAND_*).
func (b Brand) NVML() (int, bool) {
	v, ok := brands[b]
	return v, ok
}
