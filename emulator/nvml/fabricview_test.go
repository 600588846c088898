package nvml_test

import (
	"fmt"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
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

// TestFabricViewOfHGXIsItsStateRecords holds the fabric part of the view to
// the state file on an NVLink node: what go-nvml reports about every GPU's
// links, fabric info and topology towards the next GPU equals what the
// rendered state records say, and the records are not empty (18 active links
// per GPU, a common ancestor with the next GPU), so that the comparison
// cannot pass on a GPU without NVLink.
func TestFabricViewOfHGXIsItsStateRecords(t *testing.T) {
	requireMknod(t)
	p, err := profile.Builtin("hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	root := renderProfile(t, p)
	s, err := nvmlstate.ReadFile(filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath)))
	if err != nil {
		t.Fatal(err)
	}
	lib := newLib(t)
	initLib(t, lib, root)
	gpus := devices(t, lib)
	if len(gpus) != len(s.GPUs) || len(gpus) < 2 {
		t.Fatalf("NVML enumerates %d GPUs, the state holds %d; want the same, at least 2", len(gpus), len(s.GPUs))
	}
	for i, d := range gpus {
		next, nextState := gpus[(i+1)%len(gpus)], &s.GPUs[(i+1)%len(gpus)]
		want := wantFabric(s, &s.GPUs[i], nextState)
		active := 0
		for _, l := range want.Links {
			if l.Active == gonvml.FEATURE_ENABLED {
				active++
			}
		}
		if active != nvmlstate.MaxNVLinks || want.AncestorRet != gonvml.SUCCESS {
			t.Fatalf("GPU %d: the state records %d active links and ancestor %v; want %d and SUCCESS", i, active, want.AncestorRet, nvmlstate.MaxNVLinks)
		}
		if diff := cmp.Diff(want, observeFabric(t, d, next)); diff != "" {
			t.Errorf("GPU %d: NVML's fabric view differs from the state records (-state +NVML):\n%s", i, diff)
		}
	}
}
