package driver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/internal/nvidiahw"
)

// Attributes of a GPU in a multi-node NVLink domain (the fabric contract:
// docs of reference/driver, "NVLink fabric and IMEX channels").
const (
	attrNVLinkClusterUUID = "nvlinkClusterUUID"
	attrNVLinkClique      = "nvlinkClique"
	// attrIMEXChannel is an IMEX channel device's channel number;
	// deviceTypeIMEXChannel its type.
	attrIMEXChannel       = "channel"
	deviceTypeIMEXChannel = "imex-channel"
	// imexChannelPrefix names the channel devices channel-<N>.
	imexChannelPrefix = "channel-"
)

// Fabric is a GPU's membership of a multi-node NVLink domain, as
// nvmlDeviceGetGpuFabricInfoV reports it once the GPU registered with the
// fabric (state completed, status success).
type Fabric struct {
	ClusterUUID string // RFC 4122 text
	CliqueID    uint32
}

// Clique is the node-level fabric identity "<clusterUUID>.<cliqueID>".
func (f *Fabric) Clique() string { return nvidiahw.Clique(f.ClusterUUID, f.CliqueID) }

// IMEXPoolName is the pool of the IMEX channels of clique:
// imex-<cliqueID>-<first 8 characters of the cluster UUID>.
func IMEXPoolName(f Fabric) string {
	return fmt.Sprintf("imex-%d-%s", f.CliqueID, f.ClusterUUID[:8])
}

// IMEXChannelDeviceName is channel-<n>.
func IMEXChannelDeviceName(n int) string { return imexChannelPrefix + strconv.Itoa(n) }

// parseIMEXChannel reads the channel number of a channel-<n> device name.
func parseIMEXChannel(device string) (int, bool) {
	s, ok := strings.CutPrefix(device, imexChannelPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= nvidiahw.IMEXMaxChannels || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// fabricOf reads dev's fabric info through GetGpuFabricInfoV, version 2,
// as NVIDIA's DRA driver does: nil when the GPU has none
// (ERROR_NOT_SUPPORTED) or has not finished registering (a state other
// than completed, or a failed probe).
func fabricOf(dev nvml.Device) (*Fabric, error) {
	info, ret := dev.GetGpuFabricInfoV().V2()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return nil, nil
	case ret != nvml.SUCCESS:
		return nil, fmt.Errorf("get fabric info: %w", ret)
	case info.State != nvml.GPU_FABRIC_STATE_COMPLETED || nvml.Return(info.Status) != nvml.SUCCESS:
		return nil, nil
	}
	return &Fabric{ClusterUUID: nvidiahw.FormatClusterUUID(info.ClusterUuid), CliqueID: info.CliqueId}, nil
}

// NodeFabric is the node's NVLink fabric identity: the fabric every GPU of
// inv reports, or nil when a GPU has none or two disagree (NVIDIA's
// driver requires all GPUs of a node to agree).
func (inv *Inventory) NodeFabric() *Fabric {
	var f *Fabric
	for _, g := range inv.GPUs {
		switch {
		case g.Fabric == nil:
			return nil
		case f == nil:
			f = g.Fabric
		case *f != *g.Fabric:
			return nil
		}
	}
	return f
}

// fabricAttributes adds the NVLink attributes of g to attrs.
func fabricAttributes(g *GPU, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) {
	if g.Fabric == nil {
		return
	}
	attrs[attrNVLinkClusterUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.Fabric.ClusterUUID)}
	attrs[attrNVLinkClique] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.Fabric.Clique())}
}
