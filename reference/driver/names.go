package driver

import (
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The names below are go-nvlib's, so that what the driver publishes matches
// NVIDIA's own DRA driver. A Discoverer that does not ask NVML
// (reference/simulate) names what it reports with them, as NVMLDiscoverer
// does.

// MIGProfileName names a GI profile as go-nvlib (and so NVIDIA's DRA driver
// and nvidia-smi) does: <slices>g.<GB>gb plus +me, +me.all, -me or +gfx by
// profile index, where GB is the profile's share of the GPU's memory rounded
// up to eighths, times the GPU's memory in whole GiB.
func MIGProfileName(index int, info nvml.GpuInstanceProfileInfo, totalMemory uint64) string {
	var suffix string
	switch index {
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		suffix = "+me"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		suffix = "+me.all"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		suffix = "-me"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		nvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		suffix = "+gfx"
	}
	return fmt.Sprintf("%dg.%dgb%s", info.SliceCount, migMemoryGB(totalMemory, info.MemorySizeMB), suffix)
}

// migMemoryGB is go-nvlib's getMigMemorySizeGB.
func migMemoryGB(totalMemory, memorySizeMB uint64) uint64 {
	const oneMB, oneGB = 1 << 20, 1 << 30
	if totalMemory == 0 {
		return memorySizeMB / 1024
	}
	frac := float64(memorySizeMB) * oneMB / float64(totalMemory)
	frac = math.Ceil(frac*8) / 8
	return uint64(math.Round(frac * float64((totalMemory+oneGB-1)/oneGB)))
}

// ArchitectureName is the name of an NVML architecture.
func ArchitectureName(a nvml.DeviceArchitecture) (string, error) {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "Kepler", nil
	case nvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell", nil
	case nvml.DEVICE_ARCH_PASCAL:
		return "Pascal", nil
	case nvml.DEVICE_ARCH_VOLTA:
		return "Volta", nil
	case nvml.DEVICE_ARCH_TURING:
		return "Turing", nil
	case nvml.DEVICE_ARCH_AMPERE:
		return "Ampere", nil
	case nvml.DEVICE_ARCH_ADA:
		return "Ada Lovelace", nil
	case nvml.DEVICE_ARCH_HOPPER:
		return "Hopper", nil
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell", nil
	case nvml.DEVICE_ARCH_RUBIN:
		return "Rubin", nil
	case nvml.DEVICE_ARCH_UNKNOWN:
		return "Unknown", nil
	}
	return "", fmt.Errorf("unknown NVML architecture %d", a)
}

// BrandName is the name of an NVML brand.
func BrandName(b nvml.BrandType) (string, error) {
	names := map[nvml.BrandType]string{
		nvml.BRAND_UNKNOWN:             "Unknown",
		nvml.BRAND_QUADRO:              "Quadro",
		nvml.BRAND_TESLA:               "Tesla",
		nvml.BRAND_NVS:                 "NVS",
		nvml.BRAND_GRID:                "Grid",
		nvml.BRAND_GEFORCE:             "GeForce",
		nvml.BRAND_TITAN:               "Titan",
		nvml.BRAND_NVIDIA_VAPPS:        "NvidiaVApps",
		nvml.BRAND_NVIDIA_VPC:          "NvidiaVPC",
		nvml.BRAND_NVIDIA_VCS:          "NvidiaVCS",
		nvml.BRAND_NVIDIA_VWS:          "NvidiaVWS",
		nvml.BRAND_NVIDIA_CLOUD_GAMING: "NvidiaCloudGaming",
		nvml.BRAND_QUADRO_RTX:          "QuadroRTX",
		nvml.BRAND_NVIDIA_RTX:          "NvidiaRTX",
		nvml.BRAND_NVIDIA:              "Nvidia",
		nvml.BRAND_GEFORCE_RTX:         "GeForceRTX",
		nvml.BRAND_TITAN_RTX:           "TitanRTX",
	}
	if n, ok := names[b]; ok {
		return n, nil
	}
	return "", fmt.Errorf("unknown NVML brand %d", b)
}
