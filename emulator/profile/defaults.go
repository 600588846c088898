package profile

import (
	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/tpu"
)

// Defaults applied by Default.
const (
	DefaultDriverVersion     = "570.172.08"
	DefaultCUDADriverVersion = 12080 // CUDA 12.8, the version driver 570 ships
)

// Default fills unset fields, in place:
//
//   - apiVersion and kind: APIVersion and Kind;
//   - spec.uuidSeed: metadata.name;
//   - spec.driver: DefaultDriverVersion and DefaultCUDADriverVersion;
//   - spec.numaNodes[*].distances: platform.LocalDistance for the node
//     itself, platform.RemoteDistance for the others; socket: the node's id
//     (platform.DefaultNUMANodes);
//   - spec.gpus[*]: every unset model field from the catalogue model (an
//     unknown model is left for Validate to report); memoryReserved 0 and
//     migCapable false when there is no model; uuid derived with
//     gpu.DeriveUUID once the GPU's PCI address is known; mig.mode
//     "disabled" for layout all-disabled and "enabled" otherwise when a mig
//     section is present (gpu.Default);
//   - spec.nics[*]: every unset model field from the NIC catalogue model
//     (rdma false and totalVFs 0 without a model); mtu nic.DefaultMTU; link
//     "up"; once the PF's PCI address is known, mac nic.DeriveMAC and (with
//     a driver) interface nic.DefaultInterface (nic.Default);
//   - spec.nvlink: version from the first GPU's architecture, linksPerGPU,
//     domain.state "completed" (nvlink.Default).
//   - spec.tpu.chips: placed on the root complexes after the buses the
//     GPUs, NICs and switches use (tpu.Default).
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
	platform.DefaultNUMANodes(s.NUMANodes)
	for i := range s.GPUs {
		gpu.Default(&s.GPUs[i], s.UUIDSeed, s.RootComplexes)
	}
	for i := range s.NICs {
		nic.Default(&s.NICs[i], s.UUIDSeed, s.RootComplexes)
	}
	arch := ""
	if len(s.GPUs) > 0 {
		arch = string(s.GPUs[0].Architecture)
	}
	nvlink.Default(s.NVLink, arch)
	tpu.Default(s.TPU, s.RootComplexes, s.lastBuses())
}

// lastBuses maps each root complex to the highest bus its switches (their
// internal bus), GPUs and NICs take, or its own bus.
func (s *Spec) lastBuses() map[string]int {
	out := map[string]int{}
	for _, rc := range s.RootComplexes {
		out[rc.Name] = int(rc.Bus)
		for _, sw := range rc.Switches {
			out[rc.Name] = max(out[rc.Name], int(sw.Bus)+1)
		}
	}
	for _, g := range s.GPUs {
		out[g.PCIe.RootComplex] = max(out[g.PCIe.RootComplex], int(g.PCIe.Bus))
	}
	for _, n := range s.NICs {
		out[n.PCIe.RootComplex] = max(out[n.PCIe.RootComplex], int(n.PCIe.Bus))
	}
	return out
}
