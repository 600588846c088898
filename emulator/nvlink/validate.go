package nvlink

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of a node's fabric.
const (
	// MaxLinksPerGPU is the most NVLinks a GPU of the catalogue has (18 on
	// H100 SXM and on B200/GB200); NVML_NVLINK_MAX_LINKS of older NVML
	// headers.
	MaxLinksPerGPU = 18
	// MaxNVSwitches bounds the NVSwitch chips of one node (HGX A100 has 6,
	// HGX H100 4).
	MaxNVSwitches = 16
	// MaxIMEXChannels is the number of IMEX channels the driver creates
	// (/dev/nvidia-caps-imex-channels/channel0..2047).
	MaxIMEXChannels = 2048
	// MaxVersion is the newest NVLink generation the emulator knows.
	MaxVersion = 5
)

// Fabric registration states of a Domain (nvmlGpuFabricState_t).
const (
	StateNotStarted = "not-started"
	StateInProgress = "in-progress"
	StateCompleted  = "completed"
)

var clusterUUIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Validate checks a defaulted spec.nvlink at path: f may be nil (no
// NVLink); gpus is the number of GPUs of the profile, which must be
// positive when f is set.
func Validate(path *field.Path, f *Fabric, gpus int) field.ErrorList {
	if f == nil {
		return nil
	}
	var errs field.ErrorList
	if gpus == 0 {
		errs = append(errs, field.Forbidden(path, "NVLink needs GPUs: spec.gpus is empty"))
	}
	if f.Version < 1 || f.Version > MaxVersion {
		errs = append(errs, field.Invalid(path.Child("version"), f.Version, "must be an NVLink generation 1..5 (4: H100, 5: GB200)"))
	}
	if f.LinksPerGPU < 1 || f.LinksPerGPU > MaxLinksPerGPU {
		errs = append(errs, field.Invalid(path.Child("linksPerGPU"), f.LinksPerGPU, "must be 1..18 (NVML_NVLINK_MAX_LINKS)"))
	}
	if f.NVSwitches < 0 || f.NVSwitches > MaxNVSwitches {
		errs = append(errs, field.Invalid(path.Child("nvswitches"), f.NVSwitches, "must be 0..16"))
	}
	if f.IMEXChannels < 0 || f.IMEXChannels > MaxIMEXChannels {
		errs = append(errs, field.Invalid(path.Child("imexChannels"), f.IMEXChannels, "must be 0..2048"))
	}
	if f.NVSwitches == 0 && f.Domain == nil && gpus > 1 && f.LinksPerGPU%(gpus-1) != 0 && f.LinksPerGPU >= 1 {
		errs = append(errs, field.Invalid(path.Child("linksPerGPU"), f.LinksPerGPU,
			"without NVSwitches or a domain the GPUs are linked directly all-to-all: linksPerGPU must be a multiple of the number of GPUs minus one"))
	}
	if d := f.Domain; d != nil {
		dp := path.Child("domain")
		switch {
		case d.ClusterUUID == "":
			errs = append(errs, field.Required(dp.Child("clusterUUID"), "the NVLink domain's UUID"))
		case !clusterUUIDPattern.MatchString(d.ClusterUUID):
			errs = append(errs, field.Invalid(dp.Child("clusterUUID"), d.ClusterUUID, "must be a UUID xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower-case hex"))
		}
		if _, ok := FabricState(d.State); !ok {
			errs = append(errs, field.NotSupported(dp.Child("state"), d.State, []string{StateCompleted, StateInProgress, StateNotStarted}))
		}
	}
	return errs
}
