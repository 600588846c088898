package nvml_test

import (
	"context"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/internal/nvidiahw"
)

// renderProfile renders p into a new root and returns it.
func renderProfile(t *testing.T, p *profile.Profile) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), p.Metadata.Name)
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	return root
}

func devices(t *testing.T, lib gonvml.Interface) []gonvml.Device {
	t.Helper()
	n, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	var out []gonvml.Device
	for i := range n {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			t.Fatal(ret)
		}
		out = append(out, d)
	}
	return out
}

func TestHGXAllToAllThroughNVSwitches(t *testing.T) {
	requireMknod(t)
	p, err := profile.Builtin("hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	switches := map[string]bool{}
	for _, sw := range topo.NVSwitches {
		switches[sw.Address.NVMLBusID()] = true
	}
	lib := newLib(t)
	initLib(t, lib, renderProfile(t, p))
	gpus := devices(t, lib)
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs, want 8", len(gpus))
	}
	// Every GPU reaches the same NVSwitches, so every pair is connected
	// through them (how go-gpuallocator finds NVLink peers).
	for i, d := range gpus {
		reached := map[string]bool{}
		for link := range nvmlstate.MaxNVLinks {
			state, ret := d.GetNvLinkState(link)
			if ret != gonvml.SUCCESS || state != gonvml.FEATURE_ENABLED {
				t.Fatalf("GPU %d link %d: state %v, %v", i, link, state, ret)
			}
			version, ret := d.GetNvLinkVersion(link)
			if ret != gonvml.SUCCESS || gonvml.NvlinkVersion(version) != gonvml.NVLINK_VERSION_4_0 {
				t.Errorf("GPU %d link %d: version %d, %v; want NVLINK_VERSION_4_0", i, link, version, ret)
			}
			typ, ret := d.GetNvLinkRemoteDeviceType(link)
			if ret != gonvml.SUCCESS || typ != gonvml.NVLINK_DEVICE_TYPE_SWITCH {
				t.Errorf("GPU %d link %d: remote type %v, %v; want SWITCH", i, link, typ, ret)
			}
			pci, ret := d.GetNvLinkRemotePciInfo(link)
			bus := cBytes(pci.BusId[:])
			if ret != gonvml.SUCCESS || !switches[bus] || pci.PciDeviceId != 0x22A310DE {
				t.Errorf("GPU %d link %d: remote %s (0x%08X), %v; want an NVSwitch of sysfs", i, link, bus, pci.PciDeviceId, ret)
			}
			reached[bus] = true
			p2p, ret := d.GetNvLinkCapability(link, gonvml.NVLINK_CAP_P2P_SUPPORTED)
			if ret != gonvml.SUCCESS || p2p != 1 {
				t.Errorf("GPU %d link %d: P2P capability %d, %v", i, link, p2p, ret)
			}
		}
		if len(reached) != len(switches) {
			t.Errorf("GPU %d reaches %d NVSwitches, want all %d", i, len(reached), len(switches))
		}
		for j, peer := range gpus {
			if i == j {
				continue
			}
			st, ret := d.GetP2PStatus(peer, gonvml.P2P_CAPS_INDEX_NVLINK)
			if ret != gonvml.SUCCESS || st != gonvml.P2P_STATUS_OK {
				t.Errorf("P2P NVLink %d -> %d: %v, %v", i, j, st, ret)
			}
			level, ret := d.GetTopologyCommonAncestor(peer)
			want := gonvml.TOPOLOGY_SYSTEM // the two sockets
			switch {
			case i/2 == j/2:
				want = gonvml.TOPOLOGY_SINGLE // one PCIe switch
			case i/4 == j/4:
				want = gonvml.TOPOLOGY_HOSTBRIDGE
			}
			if ret != gonvml.SUCCESS || level != want {
				t.Errorf("common ancestor %d, %d: %v, %v; want %v", i, j, level, ret, want)
			}
		}
		if _, ret := d.GetGpuFabricInfoV().V3(); ret != gonvml.ERROR_NOT_SUPPORTED {
			t.Errorf("GPU %d: fabric info %v, want NOT_SUPPORTED (no multi-node domain)", i, ret)
		}
	}
}

// gb200Node is the gb200-nvl-node profile in clique cliqueID of domain, as
// a cluster profile makes it.
func gb200Node(t *testing.T, name, domain string, cliqueID uint32) *profile.Profile {
	t.Helper()
	p, err := profile.Builtin("gb200-nvl-node")
	if err != nil {
		t.Fatal(err)
	}
	p.Metadata.Name, p.Spec.UUIDSeed = name, name
	for i := range p.Spec.GPUs {
		p.Spec.GPUs[i].UUID = "" // derived from the node's seed again
	}
	p.Spec.NVLink.Domain = &nvlink.Domain{ClusterUUID: domain, CliqueID: cliqueID}
	p.Default()
	return p
}

func TestNVLinkArgumentChecks(t *testing.T) {
	requireMknod(t)
	p := gb200Node(t, "gb200", "5f0c6a7e-2d41-4b8e-9a3c-71e2d4b6f801", 1)
	lib := newLib(t)
	initLib(t, lib, renderProfile(t, p))
	gpus := devices(t, lib)
	d := gpus[0]
	checks := map[string]gonvml.Return{}
	_, checks["state link 18"] = d.GetNvLinkState(nvmlstate.MaxNVLinks)
	_, checks["version link -1"] = d.GetNvLinkVersion(-1)
	_, checks["capability 6"] = d.GetNvLinkCapability(0, gonvml.NVLINK_CAP_COUNT)
	_, checks["P2P index 5"] = d.GetP2PStatus(gpus[1], gonvml.P2P_CAPS_INDEX_UNKNOWN)
	_, checks["ancestor of itself"] = d.GetTopologyCommonAncestor(d)
	for what, ret := range checks {
		if ret != gonvml.ERROR_INVALID_ARGUMENT {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", what, ret)
		}
	}
	// Version 2 has no health summary; NULL outputs and unknown version
	// words are TestCABI's.
	v2, ret := d.GetGpuFabricInfoV().V2()
	if ret != gonvml.SUCCESS || v2.Version != gonvml.STRUCT_VERSION(gonvml.GpuFabricInfo_v2{}, 2) || v2.CliqueId != 1 ||
		v2.HealthMask != nvidiahw.FabricHealthy {
		t.Errorf("fabric info v2: %+v, %v", v2, ret)
	}
}

// nodeFabric is what NVML says of the fabric of every GPU of a node.
func nodeFabric(t *testing.T, lib gonvml.Interface, root string) []string {
	t.Helper()
	t.Setenv("DRAKIT_EMULATOR_ROOT", root)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("Init %s: %v", root, ret)
	}
	defer lib.Shutdown()
	var out []string
	for i, d := range devices(t, lib) {
		info, ret := d.GetGpuFabricInfoV().V3()
		if ret != gonvml.SUCCESS || info.State != gonvml.GPU_FABRIC_STATE_COMPLETED || info.Status != uint32(gonvml.SUCCESS) ||
			info.HealthMask != nvidiahw.FabricHealthy || info.HealthSummary != gonvml.GPU_FABRIC_HEALTH_SUMMARY_HEALTHY {
			t.Errorf("%s GPU %d: fabric %+v, %v; want completed and healthy", root, i, info, ret)
		}
		v1, ret := d.GetGpuFabricInfo()
		if ret != gonvml.SUCCESS || v1.ClusterUuid != info.ClusterUuid || v1.CliqueId != info.CliqueId {
			t.Errorf("%s GPU %d: GetGpuFabricInfo %+v, %v disagrees with V3 %+v", root, i, v1, ret, info)
		}
		out = append(out, nvidiahw.Clique(nvidiahw.FormatClusterUUID(info.ClusterUuid), info.CliqueId))
	}
	return out
}

func TestCliqueConsistentAcrossNodes(t *testing.T) {
	requireMknod(t)
	const domain = "5f0c6a7e-2d41-4b8e-9a3c-71e2d4b6f801"
	node := func(name string, clique uint32) string { return renderProfile(t, gb200Node(t, name, domain, clique)) }
	a, b, c := node("node-a", 1), node("node-b", 1), node("node-c", 2)
	lib := newLib(t)
	fa, fb, fc := nodeFabric(t, lib, a), nodeFabric(t, lib, b), nodeFabric(t, lib, c)
	want := domain + ".1"
	for name, got := range map[string][]string{"node-a": fa, "node-b": fb} {
		if len(got) != 4 {
			t.Fatalf("%s: %d GPUs", name, len(got))
		}
		for i, cl := range got {
			if cl != want {
				t.Errorf("%s GPU %d: clique %s, want %s (same as the other node of the clique)", name, i, cl, want)
			}
		}
	}
	for i, cl := range fc {
		if cl != domain+".2" || cl == want {
			t.Errorf("node-c GPU %d: clique %s, want %s.2 (another clique of the domain)", i, cl, domain)
		}
	}
}
