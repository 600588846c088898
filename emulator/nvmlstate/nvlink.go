package nvmlstate

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxNVLinks is NVML_NVLINK_MAX_LINKS of the driver the emulator stands in
// for (570): links are numbered 0..MaxNVLinks-1, and the shim answers
// NVML_ERROR_INVALID_ARGUMENT for a higher one.
const MaxNVLinks = 18

// NVLinkRemoteType is nvmlIntNvLinkDeviceType_t: what a link's far end is.
type NVLinkRemoteType int

// The remote device types a link record may name.
const (
	RemoteGPU    NVLinkRemoteType = 0 // NVML_NVLINK_DEVICE_TYPE_GPU
	RemoteSwitch NVLinkRemoteType = 2 // NVML_NVLINK_DEVICE_TYPE_SWITCH
)

// The NVML values of nvmlNvlinkVersion_t a link record may carry:
// NVML_NVLINK_VERSION_1_0 (1) .. NVML_NVLINK_VERSION_6_0 (8).
const (
	minNVLinkVersion = 1
	maxNVLinkVersion = 8
)

// Topology levels (nvmlGpuTopologyLevel_t) a peer record may carry.
const (
	TopologyInternal   = 0
	TopologySingle     = 10
	TopologyMultiple   = 20
	TopologyHostBridge = 30
	TopologyNode       = 40
	TopologySystem     = 50
)

// Fabric probe states (nvmlGpuFabricState_t).
const (
	FabricNotSupported = 0
	FabricNotStarted   = 1
	FabricInProgress   = 2
	FabricCompleted    = 3
)

// NVLink is an "nvlink" record: one NVLink of a GPU.
type NVLink struct {
	GPU     int  // minor of the gpu record
	Link    int  // 0..MaxNVLinks-1
	Active  bool // nvmlDeviceGetNvLinkState: NVML_FEATURE_ENABLED
	Version int  // nvmlNvlinkVersion_t, NVML_NVLINK_VERSION_4_0 = 6
	// RemoteType and RemoteBusID are the far end
	// (nvmlDeviceGetNvLinkRemoteDeviceType, ...RemotePciInfo_v2): a GPU
	// (its busId, of another gpu record) or an NVSwitch.
	RemoteType        NVLinkRemoteType
	RemoteBusID       string
	RemotePCIDeviceID uint32 // (device << 16) | vendor
}

// Fabric is a "fabric" record: a GPU's multi-node NVLink fabric membership
// (nvmlDeviceGetGpuFabricInfo[V]). A GPU without one answers
// NVML_ERROR_NOT_SUPPORTED.
type Fabric struct {
	GPU         int
	ClusterUUID string // lower-case RFC 4122 text; the shim reports its 16 bytes
	CliqueID    uint32
	State       int    // FabricNotSupported..FabricCompleted
	Status      int    // nvmlReturn_t of the probe, 0 = NVML_SUCCESS
	HealthMask  uint32 // NVML_GPU_FABRIC_HEALTH_MASK_* bits
}

// Peer is a "peer" record: how two GPUs reach each other
// (nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus). One record
// per unordered pair; a pair without one answers NVML_ERROR_NOT_SUPPORTED.
type Peer struct {
	GPU, Peer int  // minors of two different gpu records
	Ancestor  int  // nvmlGpuTopologyLevel_t: 0, 10, 20, 30, 40 or 50
	NVLink    bool // connected over NVLink (directly or through NVSwitches)
}

var fabricUUIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func parseNVLinkRecord(s *State, kind string, fp *fieldParser) bool {
	switch kind {
	case "nvlink":
		s.NVLinks = append(s.NVLinks, NVLink{
			GPU: int(fp.int("gpu")), Link: int(fp.int("link")), Active: fp.flag("state"), Version: int(fp.int("version")),
			RemoteType: NVLinkRemoteType(fp.int("remoteType")), RemoteBusID: fp.str("remoteBusId"),
			RemotePCIDeviceID: uint32(fp.uint("remotePciDeviceId", 32)),
		})
	case "fabric":
		s.Fabrics = append(s.Fabrics, Fabric{
			GPU: int(fp.int("gpu")), ClusterUUID: fp.str("clusterUuid"), CliqueID: uint32(fp.uint("cliqueId", 32)),
			State: int(fp.int("state")), Status: int(fp.int("status")), HealthMask: uint32(fp.uint("healthMask", 32)),
		})
	case "peer":
		s.Peers = append(s.Peers, Peer{
			GPU: int(fp.int("gpu")), Peer: int(fp.int("peer")), Ancestor: int(fp.int("ancestor")), NVLink: fp.flag("nvlink"),
		})
	default:
		return false
	}
	return true
}

func writeNVLink(b *strings.Builder, s *State) {
	for _, l := range s.NVLinks {
		fmt.Fprintf(b, "nvlink\tgpu=%d\tlink=%d\tstate=%d\tversion=%d\tremoteType=%d\tremoteBusId=%s\tremotePciDeviceId=0x%08X\n",
			l.GPU, l.Link, boolInt(l.Active), l.Version, l.RemoteType, l.RemoteBusID, l.RemotePCIDeviceID)
	}
	for _, f := range s.Fabrics {
		fmt.Fprintf(b, "fabric\tgpu=%d\tclusterUuid=%s\tcliqueId=%d\tstate=%d\tstatus=%d\thealthMask=0x%X\n",
			f.GPU, f.ClusterUUID, f.CliqueID, f.State, f.Status, f.HealthMask)
	}
	for _, p := range s.Peers {
		fmt.Fprintf(b, "peer\tgpu=%d\tpeer=%d\tancestor=%d\tnvlink=%d\n", p.GPU, p.Peer, p.Ancestor, boolInt(p.NVLink))
	}
}

// validateNVLink checks the nvlink, fabric and peer records against each
// other and the gpu records.
func (s *State) validateNVLink() error {
	busOf := map[int]string{}
	gpuAt := map[string]int{}
	for _, g := range s.GPUs {
		busOf[g.Minor] = g.BusID
		gpuAt[g.BusID] = g.Minor
	}
	links := map[[2]int]bool{}
	for i, l := range s.NVLinks {
		where := fmt.Sprintf("nvlink[%d]", i)
		own, ok := busOf[l.GPU]
		switch {
		case !ok:
			return fmt.Errorf("%w: %s.gpu %d names no gpu record", ErrInvalid, where, l.GPU)
		case l.Link < 0 || l.Link >= MaxNVLinks:
			return fmt.Errorf("%w: %s.link %d out of range 0..%d", ErrInvalid, where, l.Link, MaxNVLinks-1)
		case links[[2]int{l.GPU, l.Link}]:
			return fmt.Errorf("%w: %s: link %d of gpu %d given twice", ErrInvalid, where, l.Link, l.GPU)
		case l.Version < minNVLinkVersion || l.Version > maxNVLinkVersion:
			return fmt.Errorf("%w: %s.version %d out of range %d..%d", ErrInvalid, where, l.Version, minNVLinkVersion, maxNVLinkVersion)
		case l.RemoteType != RemoteGPU && l.RemoteType != RemoteSwitch:
			return fmt.Errorf("%w: %s.remoteType %d must be 0 (GPU) or 2 (switch)", ErrInvalid, where, l.RemoteType)
		case !busIDPattern.MatchString(l.RemoteBusID):
			return fmt.Errorf("%w: %s.remoteBusId %q is not DDDDDDDD:BB:DD.F (upper-case hex)", ErrInvalid, where, l.RemoteBusID)
		}
		if _, isGPU := gpuAt[l.RemoteBusID]; l.RemoteType == RemoteGPU && (!isGPU || l.RemoteBusID == own) {
			return fmt.Errorf("%w: %s.remoteBusId %q names no other gpu record", ErrInvalid, where, l.RemoteBusID)
		}
		links[[2]int{l.GPU, l.Link}] = true
	}
	fabrics := map[int]bool{}
	for i, f := range s.Fabrics {
		where := fmt.Sprintf("fabric[%d]", i)
		_, ok := busOf[f.GPU]
		switch {
		case !ok:
			return fmt.Errorf("%w: %s.gpu %d names no gpu record", ErrInvalid, where, f.GPU)
		case fabrics[f.GPU]:
			return fmt.Errorf("%w: %s: second fabric record of gpu %d", ErrInvalid, where, f.GPU)
		case !fabricUUIDPattern.MatchString(f.ClusterUUID):
			return fmt.Errorf("%w: %s.clusterUuid %q is not a lower-case UUID", ErrInvalid, where, f.ClusterUUID)
		case f.State < FabricNotSupported || f.State > FabricCompleted:
			return fmt.Errorf("%w: %s.state %d out of range 0..3", ErrInvalid, where, f.State)
		}
		fabrics[f.GPU] = true
	}
	pairs := map[[2]int]bool{}
	for i, p := range s.Peers {
		where := fmt.Sprintf("peer[%d]", i)
		_, okA := busOf[p.GPU]
		_, okB := busOf[p.Peer]
		key := [2]int{min(p.GPU, p.Peer), max(p.GPU, p.Peer)}
		switch {
		case !okA || !okB || p.GPU == p.Peer:
			return fmt.Errorf("%w: %s: gpu %d and peer %d must name two gpu records", ErrInvalid, where, p.GPU, p.Peer)
		case pairs[key]:
			return fmt.Errorf("%w: %s: gpus %d and %d given twice", ErrInvalid, where, key[0], key[1])
		case p.Ancestor < 0 || p.Ancestor > TopologySystem || p.Ancestor%10 != 0:
			return fmt.Errorf("%w: %s.ancestor %d is not a topology level 0, 10, .., 50", ErrInvalid, where, p.Ancestor)
		}
		pairs[key] = true
	}
	return nil
}
