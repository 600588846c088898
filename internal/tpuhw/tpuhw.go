package tpuhw

import (
	"fmt"
	"slices"
)

// VendorGoogle is Google's PCI vendor id, the vendor file of every TPU chip.
const VendorGoogle = 0x1ae0

// ClassProcessingAccelerator is the PCI class code the emulator gives TPU
// chips (base class 0x12 processing accelerator, subclass 0x00).
const ClassProcessingAccelerator = 0x120000

// Kernel drivers a chip is bound to: vfio-pci for the generations a TPU
// runtime drives from user space (v5e and later), and the accel driver of
// v4 and earlier. DriverAccel is the emulator's name for the latter; the
// real driver's name is not part of what the upstream DRA driver reads.
const (
	DriverVFIO  = "vfio-pci"
	DriverAccel = "tpu_accel"
)

// Character device majors of the nodes the emulator creates: the kernel's
// accel subsystem major (include/drm/drm_accel.h, ACCEL_MAJOR) and a major
// from the dynamic range for vfio group nodes (the kernel allocates it at
// boot; drivers stat the node rather than assume it).
const (
	AccelMajor     = 261
	VFIOGroupMajor = 241
)

// Generation is a TPU chip generation.
type Generation struct {
	// Name is the generation as profiles and attributes spell it, "v5p".
	Name string
	// DeviceID is the chip's PCI device id.
	DeviceID uint16
	// VFIO reports whether the chip is bound to vfio-pci and reached
	// through /dev/vfio/<iommu group> (v5e and later) rather than
	// /dev/accel<N>.
	VFIO bool
}

// Generations lists the generations drakit models, oldest first.
var Generations = []Generation{
	{Name: "v4", DeviceID: 0x005e},
	{Name: "v5e", DeviceID: 0x0063, VFIO: true},
	{Name: "v5p", DeviceID: 0x0062, VFIO: true},
	{Name: "v6e", DeviceID: 0x006f, VFIO: true},
}

// GenerationNames lists the names of Generations.
func GenerationNames() []string {
	var out []string
	for _, g := range Generations {
		out = append(out, g.Name)
	}
	return out
}

// LookupGeneration returns the generation called name.
func LookupGeneration(name string) (Generation, bool) {
	i := slices.IndexFunc(Generations, func(g Generation) bool { return g.Name == name })
	if i < 0 {
		return Generation{}, false
	}
	return Generations[i], true
}

// GenerationForDevice returns the generation whose chips have PCI device id
// id.
func GenerationForDevice(id uint16) (Generation, bool) {
	i := slices.IndexFunc(Generations, func(g Generation) bool { return g.DeviceID == id })
	if i < 0 {
		return Generation{}, false
	}
	return Generations[i], true
}

// Driver is the kernel driver chips of g are bound to.
func (g Generation) Driver() string {
	if g.VFIO {
		return DriverVFIO
	}
	return DriverAccel
}

// AccelPath is chip n's accel node, /dev/accel<n>. The emulator creates it
// for every generation (real v5e+ hosts only have the vfio node), so a
// driver can hand a container the same kind of node whatever the
// generation.
func AccelPath(n int) string { return fmt.Sprintf("/dev/accel%d", n) }

// VFIOGroupPath is the vfio node of IOMMU group g, /dev/vfio/<g>.
func VFIOGroupPath(g int) string { return fmt.Sprintf("/dev/vfio/%d", g) }

// Environment variables a TPU runtime reads (libtpu, the upstream DRA
// driver's container edits).
const (
	EnvTopology           = "TPU_TOPOLOGY"
	EnvWorkerID           = "TPU_WORKER_ID"
	EnvWorkerHostnames    = "TPU_WORKER_HOSTNAMES"
	EnvChipsPerHostBounds = "TPU_CHIPS_PER_HOST_BOUNDS"
	EnvHostBounds         = "TPU_HOST_BOUNDS"
	EnvVisibleChips       = "TPU_VISIBLE_CHIPS"
	EnvAcceleratorType    = "TPU_ACCELERATOR_TYPE"
	EnvSkipMetadataQuery  = "TPU_SKIP_MDS_QUERY"
)
