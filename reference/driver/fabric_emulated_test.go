package driver

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/emulator/nvlink"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// noFabric is the fabric of every GPU of an NVML mock: none.
func noFabric(nvml.Device) (*Fabric, error) { return nil, nil }

// TestFabricDiscoveryAndIMEXChannels discovers a rendered GB200 node
// through the shim: every GPU reports the profile's domain and clique, the
// published devices carry nvlinkClusterUUID and nvlinkClique, and a claim
// with an IMEX channel of the node's clique gets the channel's device node
// through CDI while one of another clique is refused.
func TestFabricDiscoveryAndIMEXChannels(t *testing.T) {
	p := builtinProfile(t, "gb200-nvl-node")
	p.Spec.NVLink.Domain = &nvlink.Domain{ClusterUUID: "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c", CliqueID: 1} // as a cluster profile sets it
	p.Default()
	root, inv := renderAndDiscover(t, p)
	d := p.Spec.NVLink.Domain
	want := Fabric{ClusterUUID: d.ClusterUUID, CliqueID: d.CliqueID}
	for _, g := range inv.GPUs {
		if g.Fabric == nil || *g.Fabric != want {
			t.Errorf("GPU %s: fabric %+v, want %+v", g.UUID, g.Fabric, want)
		}
	}
	nf := inv.NodeFabric()
	if nf == nil || nf.Clique() != d.ClusterUUID+".1" {
		t.Fatalf("node fabric %+v", nf)
	}
	res, err := buildResources(testNode, inv, publishOptions{DriverName: testDriver})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Pools[testNode].Slices {
		for _, dev := range s.Devices {
			if v := dev.Attributes[attrNVLinkClique].StringValue; v == nil || *v != nf.Clique() {
				t.Errorf("device %s: nvlinkClique %v, want %s", dev.Name, v, nf.Clique())
			}
			if v := dev.Attributes[attrNVLinkClusterUUID].StringValue; v == nil || *v != d.ClusterUUID {
				t.Errorf("device %s: nvlinkClusterUUID %v", dev.Name, v)
			}
		}
	}

	cdiDir, pluginDir := t.TempDir(), t.TempDir()
	plugin, err := startPlugin(t, staticDiscoverer{inv}, root, "/lib/libnvidia-ml.so.1", cdiDir, pluginDir, nil, &harnesstest.FatalRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	pool := IMEXPoolName(*nf)
	got := harnesstest.PrepareOne(t, plugin.Plugin, harnesstest.AllocatedClaim("imex", "uid-imex",
		harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-0"),
		harnesstest.AllocResult(testDriver, pool, "channel", "channel-3")))
	if got.Err != nil {
		t.Fatalf("prepare GPU and channel: %v", got.Err)
	}
	spec, err := cdiapi.ReadSpec(cdiDir+"/k8s.gpu.drakit.dev-claim_uid-imex.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, dev := range spec.Devices {
		for _, n := range dev.ContainerEdits.DeviceNodes {
			if n.Path == "/dev/nvidia-caps-imex-channels/channel3" && n.HostPath == root+"/dev/nvidia-caps-imex-channels/channel3" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("CDI spec does not inject channel3: %+v", spec.Devices)
	}
	for _, tc := range []struct{ pool, device, want string }{
		{"imex-2-" + d.ClusterUUID[:8], "channel-3", "this node is in clique " + nf.Clique()},
		{pool, "channel-9", "this node has no /dev/nvidia-caps-imex-channels/channel9"},
		{pool, "channel-03", "not an IMEX channel"},
	} {
		res := harnesstest.PrepareOne(t, plugin.Plugin, harnesstest.AllocatedClaim("bad", "uid-bad",
			harnesstest.AllocResult(testDriver, tc.pool, "channel", tc.device)))
		if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) {
			t.Errorf("%s/%s: %v, want an error saying %q", tc.pool, tc.device, res.Err, tc.want)
		}
	}
	if _, err := os.Stat(cdiDir + "/k8s.gpu.drakit.dev-claim_uid-bad.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused claim got a CDI spec: %v", err)
	}
}

// TestNoFabricNoAttributes: a node without a multi-node domain (HGX H100)
// publishes no NVLink attributes and refuses every IMEX channel.
func TestNoFabricNoAttributes(t *testing.T) {
	root, inv := renderAndDiscover(t, builtinProfile(t, "hgx-h100"))
	if inv.NodeFabric() != nil {
		t.Fatalf("node fabric %+v, want none", inv.NodeFabric())
	}
	res, err := buildResources(testNode, inv, publishOptions{DriverName: testDriver})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Pools[testNode].Slices {
		for _, dev := range s.Devices {
			if _, ok := dev.Attributes[attrNVLinkClique]; ok {
				t.Errorf("device %s has nvlinkClique", dev.Name)
			}
		}
	}
	hw := &hardware{driverRoot: root, inventory: inv}
	if err := hw.AdmitPool("imex-1-00000000", "channel-0"); !errors.Is(err, ErrWrongClique) {
		t.Errorf("AdmitPool without a clique: %v, want ErrWrongClique", err)
	}
}
