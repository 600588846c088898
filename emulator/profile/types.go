package profile

import (
	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/tpu"
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
	// NUMANodes are the node's NUMA nodes; ids must be 0..n-1 (package
	// emulator/platform, like the root complexes).
	NUMANodes []platform.NUMANode `json:"numaNodes,omitempty"`
	// RootComplexes are the PCIe host bridges (pci<domain>:<bus>).
	RootComplexes []platform.RootComplex `json:"rootComplexes,omitempty"`
	// GPUs are the NVIDIA GPUs, each placed below a root complex
	// (package emulator/gpu).
	GPUs []gpu.GPU `json:"gpus,omitempty"`
	// NICs are the network adapters (SR-IOV physical functions), placed
	// like GPUs, on the same buses' numbering (package emulator/nic).
	NICs []nic.NIC `json:"nics,omitempty"`
	// NVLink is the GPUs' NVLink fabric (package emulator/nvlink); nil
	// for GPUs without NVLink.
	NVLink *nvlink.Fabric `json:"nvlink,omitempty"`
	// TPU is the node's TPU host (package emulator/tpu); nil for a node
	// without TPU chips.
	TPU *tpu.Host `json:"tpu,omitempty"`
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
