package render

import (
	"fmt"

	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/internal/nvidiahw"
)

// offNodeSwitchDomain is the PCI domain of the NVSwitches a multi-node
// domain's GPUs link to: they sit in the rack's switch trays, not on the
// node, so their bus ids name no PCI function of the node (as on a GB200
// NVL72, where link l of every GPU goes to switch chip l).
const offNodeSwitchDomain = 0xFFFF

// nvswitchPCIDeviceID is nvswitchIdentity as NVML reports it,
// (device << 16) | vendor.
var nvswitchPCIDeviceID = nvswitchIdentity.device<<16 | nvswitchIdentity.vendor

// nvlinkState adds the NVLink records to s (whose gpu records are topo's
// GPUs, in order): every GPU's links, their far ends (an NVSwitch of the
// node, a switch of the rack, or a peer GPU for GPUs linked directly,
// linksPerGPU/(n-1) links to each), the fabric record of each GPU of a
// multi-node domain, and a peer record for every pair of GPUs.
func nvlinkState(s *nvmlstate.State, p *profile.Profile, topo *profile.Topology) {
	f := p.Spec.NVLink
	gpus := topo.GPUs
	if f != nil {
		for i, pg := range gpus {
			for l := range f.LinksPerGPU {
				link := nvmlstate.NVLink{GPU: *pg.GPU.Minor, Link: l, Active: true, Version: int(nvlink.NVMLVersion(f.Version)),
					RemoteType: nvmlstate.RemoteSwitch, RemotePCIDeviceID: nvswitchPCIDeviceID}
				switch {
				case len(topo.NVSwitches) > 0:
					link.RemoteBusID = topo.NVSwitches[l%len(topo.NVSwitches)].Address.NVMLBusID()
				case f.Domain != nil:
					link.RemoteBusID = fmt.Sprintf("%08X:%02X:00.0", offNodeSwitchDomain, l)
				case len(gpus) > 1:
					peer := l / (f.LinksPerGPU / (len(gpus) - 1))
					if peer >= i {
						peer++
					}
					link.RemoteType, link.RemoteBusID = nvmlstate.RemoteGPU, s.GPUs[peer].BusID
					link.RemotePCIDeviceID = s.GPUs[peer].PCIDeviceID
				default:
					continue // a lone GPU without switches: nothing at the far end
				}
				s.NVLinks = append(s.NVLinks, link)
			}
			if d := f.Domain; d != nil {
				state, _ := nvlink.FabricState(d.State)
				s.Fabrics = append(s.Fabrics, nvmlstate.Fabric{GPU: *pg.GPU.Minor, ClusterUUID: d.ClusterUUID,
					CliqueID: d.CliqueID, State: int(state), HealthMask: nvidiahw.FabricHealthy})
			}
		}
	}
	connected := f != nil && (len(topo.NVSwitches) > 0 || f.Domain != nil || len(gpus) > 1)
	for i := range gpus {
		for j := i + 1; j < len(gpus); j++ {
			s.Peers = append(s.Peers, nvmlstate.Peer{GPU: *gpus[i].GPU.Minor, Peer: *gpus[j].GPU.Minor,
				Ancestor: commonAncestor(gpus[i], gpus[j]), NVLink: connected})
		}
	}
}

// commonAncestor is the nvmlGpuTopologyLevel_t of two GPUs: SINGLE behind
// one PCIe switch, MULTIPLE below one root port, HOSTBRIDGE on one root
// complex, NODE on one NUMA node, SYSTEM otherwise.
func commonAncestor(a, b profile.PlacedGPU) int {
	switch {
	case a.HostBridge != b.HostBridge:
		if a.HostBridge.NUMANode >= 0 && a.HostBridge.NUMANode == b.HostBridge.NUMANode {
			return nvmlstate.TopologyNode
		}
		return nvmlstate.TopologySystem
	case len(a.Bridges) > 0 && len(b.Bridges) > 0 && a.Bridges[0] == b.Bridges[0]:
		if len(a.Bridges) > 1 && len(b.Bridges) > 1 && a.Bridges[1] == b.Bridges[1] {
			return nvmlstate.TopologySingle
		}
		return nvmlstate.TopologyMultiple
	}
	return nvmlstate.TopologyHostBridge
}
