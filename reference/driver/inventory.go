package driver

import (
	"context"
	"fmt"
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
}

// DeviceName is the device's name in the ResourceSlice: gpu-<minor>.
func (g *GPU) DeviceName() string { return fmt.Sprintf("gpu-%d", g.Minor) }

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
