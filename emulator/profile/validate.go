package profile

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/internal/fielderr"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/tpu"
)

var driverVersionPattern = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){1,2}$`)

// Validate checks a defaulted profile and returns every problem with its
// field path, e.g. "spec.gpus[3].minor: Duplicate value: 2". Call Default
// first: Validate reports unset defaultable fields as required.
//
// It checks the document's own fields, then hands each part to the package
// that owns it, in this order: the NUMA nodes and root complexes
// (platform), the GPUs (gpu.Validate), the NICs (nic.Validate), the TPU
// host (tpu.Validate), the bus ranges of every endpoint placed, GPUs, NICs
// and TPU chips alike, through the one platform.Placer every kind placed
// its endpoints with, and last the NVLink fabric (nvlink.Validate).
func (p *Profile) Validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	errs = append(errs, fielderr.ValidateName(field.NewPath("metadata", "name"), p.Metadata.Name)...)
	spec := field.NewPath("spec")
	if p.Spec.UUIDSeed == "" {
		errs = append(errs, field.Required(spec.Child("uuidSeed"), "defaults to metadata.name"))
	}
	errs = append(errs, validateDriver(spec.Child("driver"), &p.Spec.Driver)...)
	errs = append(errs, platform.ValidateNUMANodes(spec.Child("numaNodes"), p.Spec.NUMANodes)...)
	errs = append(errs, platform.ValidateRootComplexes(spec.Child("rootComplexes"), p.Spec.RootComplexes, p.Spec.NUMANodes)...)
	placer := platform.NewPlacer(p.Spec.RootComplexes)
	errs = append(errs, gpu.Validate(spec.Child("gpus"), p.Spec.GPUs, p.Spec.UUIDSeed, placer)...)
	errs = append(errs, nic.Validate(spec.Child("nics"), p.Spec.NICs, p.Spec.UUIDSeed, placer)...)
	errs = append(errs, tpu.Validate(spec.Child("tpu"), p.Spec.TPU, placer)...)
	errs = append(errs, placer.ValidateBusRanges(p.endpoints())...)
	errs = append(errs, nvlink.Validate(spec.Child("nvlink"), p.Spec.NVLink, len(p.Spec.GPUs))...)
	return errs
}

// endpoints lists the GPUs, the NICs, then the TPU chips, as PCI endpoints.
func (p *Profile) endpoints() []platform.Endpoint {
	var out []platform.Endpoint
	for i := range p.Spec.GPUs {
		out = append(out, platform.Endpoint{Path: field.NewPath("spec", "gpus").Index(i), PCIe: &p.Spec.GPUs[i].PCIe})
	}
	for i := range p.Spec.NICs {
		out = append(out, platform.Endpoint{Path: field.NewPath("spec", "nics").Index(i), PCIe: &p.Spec.NICs[i].PCIe})
	}
	return append(out, tpu.Endpoints(field.NewPath("spec", "tpu"), p.Spec.TPU)...)
}

func validateDriver(path *field.Path, d *Driver) field.ErrorList {
	var errs field.ErrorList
	switch {
	case d.DriverVersion == "":
		errs = append(errs, field.Required(path.Child("driverVersion"), ""))
	case !driverVersionPattern.MatchString(d.DriverVersion):
		errs = append(errs, field.Invalid(path.Child("driverVersion"), d.DriverVersion,
			"must be a driver version such as 570.172.08"))
	}
	if v := d.CUDADriverVersion; v < 1000 || v > 99990 || v%10 != 0 {
		errs = append(errs, field.Invalid(path.Child("cudaDriverVersion"), v,
			"must be major*1000+minor*10, e.g. 12080 for CUDA 12.8"))
	}
	return errs
}
