package gpu

import (
	"crypto/sha256"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/emulator/platform"
)

// Default fills a GPU's unset fields, in place: every unset model field from
// the catalogue model (an unknown model is left for Validate to report);
// memoryReserved 0 and migCapable false when there is no model; uuid
// derived from seed with DeriveUUID once the GPU's PCI address below rcs
// (spec.rootComplexes) is known; mig.mode "disabled" for layout
// all-disabled and "enabled" otherwise when a mig section is present.
func Default(g *GPU, seed string, rcs []platform.RootComplex) {
	defaultGPU(g)
	defaultMIG(g.MIG)
	if g.UUID == "" {
		if addr, ok := platform.PlacementAddress(rcs, g.PCIe); ok {
			g.UUID = DeriveUUID(seed, addr)
		}
	}
}

func defaultGPU(g *GPU) {
	m, ok := LookupModel(g.Model)
	if !ok {
		if g.Model == "" {
			if g.MemoryReserved == nil {
				g.MemoryReserved = bytesQuantity(0)
			}
			if g.MIGCapable == nil {
				g.MIGCapable = ptr(false)
			}
		}
		return
	}
	setString(&g.Name, m.Name)
	setHex(&g.VendorID, m.VendorID)
	setHex(&g.DeviceID, m.DeviceID)
	setHex(&g.SubsystemVendorID, m.SubsystemVendorID)
	setHex(&g.SubsystemDeviceID, m.SubsystemDeviceID)
	if g.Memory == nil {
		g.Memory = bytesQuantity(m.Memory)
	}
	if g.MemoryReserved == nil {
		g.MemoryReserved = bytesQuantity(m.MemoryReserved)
	}
	if g.BAR1Size == nil {
		g.BAR1Size = bytesQuantity(m.BAR1Size)
	}
	if g.Architecture == "" {
		g.Architecture = m.Architecture
	}
	if g.Brand == "" {
		g.Brand = m.Brand
	}
	setString(&g.ComputeCapability, m.ComputeCapability)
	if g.MIGCapable == nil {
		g.MIGCapable = ptr(m.MIGCapable)
	}
	setString(&g.VBIOSVersion, m.VBIOSVersion)
}

// DeriveUUID derives a GPU UUID from a seed and the GPU's PCI address: the
// first 16 bytes of SHA-256("<seed>/<address>") in NVML's GPU-… form. The
// same profile therefore always renders the same UUIDs.
func DeriveUUID(seed string, addr platform.Address) string {
	h := sha256.Sum256([]byte(seed + "/" + addr.String()))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// DeriveMIGUUID derives the UUID of the MIG device (compute instance) ci of
// GPU instance gi on the GPU with UUID gpuUUID: the first 16 bytes of
// SHA-256("<gpuUUID>/gi<gi>/ci<ci>") in NVML's MIG-… form. A MIG device that
// is destroyed and created again at the same ids gets the same UUID (real
// drivers make a new one).
func DeriveMIGUUID(gpuUUID string, gi, ci int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/gi%d/ci%d", gpuUUID, gi, ci)))
	return fmt.Sprintf("MIG-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func bytesQuantity(n int64) *resource.Quantity {
	return resource.NewQuantity(n, resource.BinarySI)
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
