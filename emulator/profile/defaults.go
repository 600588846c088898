package profile

import (
	"crypto/sha256"
	"fmt"
)

// Defaults applied by Default.
const (
	DefaultDriverVersion     = "570.172.08"
	DefaultCUDADriverVersion = 12080 // CUDA 12.8, the version driver 570 ships
	LocalDistance            = 10    // SLIT distance of a node to itself
	RemoteDistance           = 20    // the kernel's distance to other nodes without a SLIT
)

// Default fills unset fields, in place:
//
//   - apiVersion and kind: APIVersion and Kind;
//   - spec.uuidSeed: metadata.name;
//   - spec.driver: DefaultDriverVersion and DefaultCUDADriverVersion;
//   - spec.numaNodes[*].distances: LocalDistance for the node itself,
//     RemoteDistance for the others; socket: the node's id;
//   - spec.gpus[*]: every unset model field from the catalogue model (an
//     unknown model is left for Validate to report); memoryReserved 0 and
//     migCapable false when there is no model; uuid derived with DeriveUUID
//     once the GPU's PCI address is known; mig.mode "disabled" for layout
//     all-disabled and "enabled" otherwise when a mig section is present;
//   - spec.nics[*]: every unset model field from the NIC catalogue model
//     (rdma false and totalVFs 0 without a model); mtu DefaultMTU; link
//     "up"; once the PF's PCI address is known, mac DeriveMAC and (with a
//     driver) interface DefaultInterface.
//
// Default is idempotent and never fails; Validate reports what it could not
// fill.
func (p *Profile) Default() {
	if p.APIVersion == "" {
		p.APIVersion = APIVersion
	}
	if p.Kind == "" {
		p.Kind = Kind
	}
	s := &p.Spec
	if s.UUIDSeed == "" {
		s.UUIDSeed = p.Metadata.Name
	}
	if s.Driver.DriverVersion == "" {
		s.Driver.DriverVersion = DefaultDriverVersion
	}
	if s.Driver.CUDADriverVersion == 0 {
		s.Driver.CUDADriverVersion = DefaultCUDADriverVersion
	}
	for i := range s.NUMANodes {
		n := &s.NUMANodes[i]
		if n.ID == nil {
			continue
		}
		if n.Socket == nil {
			n.Socket = ptr(*n.ID)
		}
		if n.Distances == nil {
			n.Distances = make([]int, len(s.NUMANodes))
			for j := range n.Distances {
				n.Distances[j] = RemoteDistance
			}
			if *n.ID >= 0 && *n.ID < len(n.Distances) {
				n.Distances[*n.ID] = LocalDistance
			}
		}
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		defaultGPU(g)
		defaultMIG(g.MIG)
		if g.UUID == "" {
			if addr, ok := p.gpuAddress(g); ok {
				g.UUID = DeriveUUID(s.UUIDSeed, addr)
			}
		}
	}
	for i := range s.NICs {
		defaultNIC(p, &s.NICs[i])
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

// gpuAddress returns the GPU's PCI address when its placement names an
// existing root complex and a bus.
func (p *Profile) gpuAddress(g *GPU) (Address, bool) { return p.placementAddress(g.PCIe) }

// DeriveUUID derives a GPU UUID from a seed and the GPU's PCI address: the
// first 16 bytes of SHA-256("<seed>/<address>") in NVML's GPU-… form. The
// same profile therefore always renders the same UUIDs.
func DeriveUUID(seed string, addr Address) string {
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

func setString(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func setHex(dst *Hex, v Hex) {
	if *dst == 0 {
		*dst = v
	}
}

func ptr[T any](v T) *T { return &v }
