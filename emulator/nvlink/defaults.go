package nvlink

// Default fills f's unset fields, in place (f may be nil): version from
// the GPUs' architecture arch (DefaultVersion), linksPerGPU 18 for NVLink 4
// and 5 and 12 before, domain.state "completed". An unknown architecture
// leaves version 0 for Validate to report.
func Default(f *Fabric, arch string) {
	if f == nil {
		return
	}
	if f.Version == 0 {
		f.Version = DefaultVersion(arch)
	}
	if f.LinksPerGPU == 0 && f.Version != 0 {
		f.LinksPerGPU = MaxLinksPerGPU
		if f.Version < 4 {
			f.LinksPerGPU = 12
		}
	}
	if f.Domain != nil && f.Domain.State == "" {
		f.Domain.State = StateCompleted
	}
}

// DefaultVersion is the NVLink generation of a GPU architecture (3 for
// Ampere, 4 for Hopper, 5 for Blackwell), 0 for one without a default.
func DefaultVersion(arch string) int {
	return map[string]int{"Volta": 2, "Ampere": 3, "Hopper": 4, "Blackwell": 5}[arch]
}
