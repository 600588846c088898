package nvml_test

import (
	"fmt"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvmlstate"
)

// linkView is what NVML reports about one NVLink of a GPU.
type linkView struct {
	Active               gonvml.EnableState
	StateRet, VersionRet gonvml.Return
	Version              uint32
	P2PCapability        uint32
	CapabilityRet        gonvml.Return
	RemoteType           gonvml.IntNvLinkDeviceType
	RemoteTypeRet        gonvml.Return
	RemoteBusID          string
	RemoteDeviceID       uint32
	RemoteRet            gonvml.Return
}

// fabricView is what NVML reports about a GPU's links (0..MaxNVLinks, the
// last one past the end), its fabric info, and its topology and P2P status
// towards the next enumerated GPU.
type fabricView struct {
	Links       [nvmlstate.MaxNVLinks + 1]linkView
	Fabric      gonvml.GpuFabricInfo_v3
	FabricRet   gonvml.Return
	Ancestor    gonvml.GpuTopologyLevel
	AncestorRet gonvml.Return
	P2P         [5]gonvml.GpuP2PStatus
	P2PRet      gonvml.Return
}

// wantFabric is the fabricView of GPU g whose next enumerated GPU is next
// (nil when g is the only one).
func wantFabric(s *nvmlstate.State, g, next *nvmlstate.GPU) fabricView {
	var v fabricView
	for l := range v.Links {
		lv := &v.Links[l]
		ret := gonvml.ERROR_NOT_SUPPORTED
		if l >= nvmlstate.MaxNVLinks {
			ret = gonvml.ERROR_INVALID_ARGUMENT
		}
		lv.StateRet, lv.VersionRet, lv.CapabilityRet, lv.RemoteTypeRet, lv.RemoteRet = ret, ret, ret, ret, ret
		for _, r := range s.NVLinks {
			if r.GPU != g.Minor || r.Link != l {
				continue
			}
			*lv = linkView{Version: uint32(r.Version), P2PCapability: 1, RemoteType: gonvml.IntNvLinkDeviceType(r.RemoteType),
				RemoteBusID: r.RemoteBusID, RemoteDeviceID: r.RemotePCIDeviceID}
			if r.Active {
				lv.Active = gonvml.FEATURE_ENABLED
			}
		}
	}
	v.FabricRet = gonvml.ERROR_NOT_SUPPORTED
	for _, f := range s.Fabrics {
		if f.GPU != g.Minor {
			continue
		}
		v.FabricRet = gonvml.SUCCESS
		v.Fabric = gonvml.GpuFabricInfo_v3{Version: gonvml.STRUCT_VERSION(gonvml.GpuFabricInfo_v3{}, 3),
			ClusterUuid: uuidBytes(f.ClusterUUID), Status: uint32(int32(f.Status)), CliqueId: f.CliqueID,
			State: uint8(f.State), HealthMask: f.HealthMask, HealthSummary: wantSummary(f)}
	}
	v.AncestorRet, v.P2PRet = gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NOT_SUPPORTED
	if next == nil {
		v.AncestorRet, v.P2PRet = gonvml.ERROR_INVALID_ARGUMENT, gonvml.ERROR_INVALID_ARGUMENT
		return v
	}
	for _, p := range s.Peers {
		if (p.GPU != g.Minor || p.Peer != next.Minor) && (p.GPU != next.Minor || p.Peer != g.Minor) {
			continue
		}
		v.Ancestor, v.AncestorRet, v.P2PRet = gonvml.GpuTopologyLevel(p.Ancestor), gonvml.SUCCESS, gonvml.SUCCESS
		for i := range v.P2P {
			switch {
			case p.NVLink:
			case gonvml.GpuP2PCapsIndex(i) == gonvml.P2P_CAPS_INDEX_NVLINK || gonvml.GpuP2PCapsIndex(i) == gonvml.P2P_CAPS_INDEX_ATOMICS:
				v.P2P[i] = gonvml.P2P_STATUS_NOT_SUPPORTED
			case gonvml.GpuTopologyLevel(p.Ancestor) > gonvml.TOPOLOGY_HOSTBRIDGE:
				v.P2P[i] = gonvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED
			}
		}
	}
	return v
}

func wantSummary(f nvmlstate.Fabric) uint8 {
	switch {
	case f.State != nvmlstate.FabricCompleted:
		return gonvml.GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED
	case f.HealthMask>>4&3 == 1:
		return gonvml.GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY
	case f.HealthMask&3 == 1:
		return gonvml.GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY
	}
	return gonvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY
}

// uuidBytes is the 16 bytes of a validated lower-case UUID.
func uuidBytes(s string) [16]uint8 {
	var b [16]uint8
	hex := ""
	for _, c := range s {
		if c != '-' {
			hex += string(c)
		}
	}
	for i := range b {
		fmt.Sscanf(hex[2*i:2*i+2], "%02x", &b[i])
	}
	return b
}

// observeFabric asks lib what wantFabric predicts of d, whose next
// enumerated GPU is next (nil: none; d itself is then passed, which NVML
// refuses).
func observeFabric(t testing.TB, d, next gonvml.Device) fabricView {
	t.Helper()
	var v fabricView
	for l := range v.Links {
		lv := &v.Links[l]
		lv.Active, lv.StateRet = d.GetNvLinkState(l)
		lv.Version, lv.VersionRet = d.GetNvLinkVersion(l)
		lv.P2PCapability, lv.CapabilityRet = d.GetNvLinkCapability(l, gonvml.NVLINK_CAP_P2P_SUPPORTED)
		lv.RemoteType, lv.RemoteTypeRet = d.GetNvLinkRemoteDeviceType(l)
		var pci gonvml.PciInfo
		pci, lv.RemoteRet = d.GetNvLinkRemotePciInfo(l)
		if lv.RemoteRet == gonvml.SUCCESS {
			lv.RemoteBusID, lv.RemoteDeviceID = cBytes(pci.BusId[:]), pci.PciDeviceId
		}
	}
	v.Fabric, v.FabricRet = d.GetGpuFabricInfoV().V3()
	if v.FabricRet != gonvml.SUCCESS {
		v.Fabric = gonvml.GpuFabricInfo_v3{}
	}
	if next == nil {
		next = d
	}
	v.Ancestor, v.AncestorRet = d.GetTopologyCommonAncestor(next)
	for i := range v.P2P {
		var ret gonvml.Return
		v.P2P[i], ret = d.GetP2PStatus(next, gonvml.GpuP2PCapsIndex(i))
		if i == 0 || ret != v.P2PRet {
			v.P2PRet = ret
		}
	}
	return v
}
