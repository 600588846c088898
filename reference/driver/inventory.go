package driver

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Discoverer finds the node's GPUs. NVMLDiscoverer is the real one; tests use
// fixed inventories.
type Discoverer interface {
	// Discover returns the GPUs in enumeration order. An error means the
	// driver cannot know its devices and must not start.
	Discover(ctx context.Context) (*Inventory, error)
}

// Inventory is what discovery found on the node.
type Inventory struct {
	// DriverVersion as NVML reports it, e.g. "570.172.08".
	DriverVersion string
	// CUDADriverVersion as NVML reports it, e.g. 12080 for CUDA 12.8.
	CUDADriverVersion int
	// GPUs in NVML enumeration order.
	GPUs []GPU
}

// GPU is one physical GPU.
type GPU struct {
	Index        int    // NVML enumeration index
	Minor        int    // /dev/nvidia<Minor>
	UUID         string // GPU-…
	ProductName  string // e.g. "NVIDIA H100 80GB HBM3"
	Architecture string // e.g. "Hopper"
	Brand        string // e.g. "Nvidia", "Tesla"
	CCMajor      int    // CUDA compute capability
	CCMinor      int
	MemoryBytes  uint64
	// PCIBusID in sysfs form, 0000:1b:00.0.
	PCIBusID string
	// PCIeRoot is the root complex (pci0000:00); empty when sysfs could not
	// tell.
	PCIeRoot string
	// NUMANode is the device's NUMA node; -1 when it has no NUMA affinity or
	// sysfs could not tell.
	NUMANode int
	// CloseNUMANodes are the NUMA nodes the device is close to, published
	// as the list attribute closeNUMANodes (NVMLDiscoverer.ListAttributes):
	// NUMANode first, then the same-socket nodes at the minimum SLIT
	// distance from it. Empty when not discovered or NUMANode is -1.
	CloseNUMANodes []int64
	// MIG is set when the GPU's current MIG mode is enabled; nil for GPUs
	// without MIG support or with MIG disabled.
	MIG *MIGInfo
	// Fabric is the GPU's multi-node NVLink fabric; nil without one.
	Fabric *Fabric
}

// MIGInfo is what NVML reports about a GPU in MIG mode.
type MIGInfo struct {
	// Profiles are the GPU-instance profiles NVML reports, in profile index
	// order, each with its possible placements.
	Profiles []MIGProfile
	// Instances are the MIG devices (compute instances) that existed at
	// discovery, in MIG device handle order.
	Instances []MIGInstance
}

// MIGProfile is one GPU-instance profile of a GPU.
type MIGProfile struct {
	// Index is the NVML_GPU_INSTANCE_PROFILE_* value the profile was read
	// with; Info.Id is the driver's profile ID that create calls take.
	Index int
	Info  nvml.GpuInstanceProfileInfo
	// Name as nvidia-smi and go-nvlib print it, e.g. "1g.10gb", "1g.10gb+me".
	Name string
	// Placements are the possible placements (start:size in memory slices).
	Placements []nvml.GpuInstancePlacement
}

// MIGInstance is an existing MIG device: one compute instance inside one GPU
// instance.
type MIGInstance struct {
	GI, CI int
	// ProfileID is the GI profile ID; Start and Size the GI's placement.
	ProfileID   int
	Start, Size int
	// Name is the MIG device's profile name: the GI profile's name, or
	// "<c>c.<GI profile name>" for a CI smaller than its GI.
	Name        string
	UUID        string
	MemoryBytes uint64
	// GICapMinor and CICapMinor are the minors of the
	// /dev/nvidia-caps/nvidia-cap<minor> nodes that grant access to the GI
	// and the CI.
	GICapMinor, CICapMinor int
}

// DeviceName is the device's name in the ResourceSlice: gpu-<minor>.
func (g *GPU) DeviceName() string { return fmt.Sprintf("gpu-%d", g.Minor) }

// discover runs disc and checks what it found: no two GPUs with one device
// name.
func discover(ctx context.Context, disc Discoverer) (*Inventory, error) {
	inv, err := disc.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover GPUs: %w", err)
	}
	if _, err := inv.byDeviceName(); err != nil {
		return nil, err
	}
	return inv, nil
}

// byDeviceName indexes the inventory by device name and rejects duplicates.
func (inv *Inventory) byDeviceName() (map[string]GPU, error) {
	m := make(map[string]GPU, len(inv.GPUs))
	for _, g := range inv.GPUs {
		name := g.DeviceName()
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("index inventory: two GPUs have minor %d", g.Minor)
		}
		m[name] = g
	}
	return m, nil
}
