package gpu

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/emulator/platform"
)

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
	VendorID          platform.Hex `json:"vendorID,omitempty"`
	DeviceID          platform.Hex `json:"deviceID,omitempty"`
	SubsystemVendorID platform.Hex `json:"subsystemVendorID,omitempty"`
	SubsystemDeviceID platform.Hex `json:"subsystemDeviceID,omitempty"`
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
	PCIe platform.Placement `json:"pcie"`
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
