package nvidiahw

import (
	"fmt"
	"strconv"
)

// Fabric health (nvmlGpuFabricInfo_v2+.healthMask, NVML_GPU_FABRIC_HEALTH_MASK_*
// in nvml.h): each field is a few bits at a shift; a healthy GPU of a
// completed fabric reports degraded bandwidth FALSE (2 at shift 0), route
// recovery FALSE (2 at 2), route unhealthy FALSE (2 at 4), access timeout
// recovery FALSE (2 at 6) and incorrect configuration NONE (1 at 8).
const (
	FabricHealthy uint32 = 2<<0 | 2<<2 | 2<<4 | 2<<6 | 1<<8
	// FabricDegradedBandwidth is FabricHealthy with degraded bandwidth TRUE
	// (1 at shift 0).
	FabricDegradedBandwidth uint32 = FabricHealthy&^(3<<0) | 1<<0
)

// IMEX channels: the driver registers the character device region
// "nvidia-caps-imex-channels" (a dynamic major, read it from /proc/devices)
// and, with NVreg_CreateImexChannel0 or nvidia-modprobe, creates
// /dev/nvidia-caps-imex-channels/channel<N> with minor N. Access to the
// IMEX management interface is the capability file
// /proc/driver/nvidia/capabilities/fabric-imex-mgmt.
const (
	IMEXChannelsProcName = "nvidia-caps-imex-channels"
	IMEXChannelDir       = "/dev/nvidia-caps-imex-channels"
	IMEXMgmtCapPath      = "/proc/driver/nvidia/capabilities/fabric-imex-mgmt"
	// IMEXMaxChannels is the number of channels the driver offers.
	IMEXMaxChannels = 2048
)

// IMEXChannelPath is /dev/nvidia-caps-imex-channels/channel<n>.
func IMEXChannelPath(n int) string {
	return IMEXChannelDir + "/channel" + strconv.Itoa(n)
}

// Clique is NVIDIA's node-level NVLink fabric identity
// "<clusterUUID>.<cliqueID>", what the NVIDIA DRA driver and GPU feature
// discovery derive from nvmlDeviceGetGpuFabricInfoV; every GPU of a node
// of a multi-node NVLink domain reports the same.
func Clique(clusterUUID string, cliqueID uint32) string {
	return fmt.Sprintf("%s.%d", clusterUUID, cliqueID)
}

// FormatClusterUUID is the RFC 4122 text form of NVML's 16-byte
// clusterUuid (nvmlGpuFabricInfo*.clusterUuid), as uuid.FromBytes(...).String()
// gives it.
func FormatClusterUUID(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
