package profile

import (
	"testing"

	"drakit.dev/drakit/emulator/nvlink"
)

func TestNVLinkDefaults(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-nvlink.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := p.Spec.NVLink
	if f.Version != 4 || f.LinksPerGPU != 18 || f.Domain.State != nvlink.StateCompleted {
		t.Errorf("defaults: version %d, linksPerGPU %d, state %q; want 4 (Hopper), 18, completed", f.Version, f.LinksPerGPU, f.Domain.State)
	}
}

func TestNVLinkBuiltins(t *testing.T) {
	t.Parallel()
	hgx, err := Builtin("hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := hgx.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.GPUs) != 8 || len(topo.NVSwitches) != 4 || hgx.Spec.NVLink.Version != 4 || hgx.Spec.NVLink.Domain != nil {
		t.Fatalf("hgx-h100: %d GPUs, %d NVSwitches, NVLink %d, domain %v", len(topo.GPUs), len(topo.NVSwitches), hgx.Spec.NVLink.Version, hgx.Spec.NVLink.Domain)
	}
	// Each NVSwitch sits on its own root port, on a bus no GPU bridge uses,
	// alternating between the sockets.
	want := []string{"0000:01:00.0", "0000:02:00.0", "0000:81:00.0", "0000:82:00.0"}
	for i, sw := range topo.NVSwitches {
		if got := sw.Address.String(); got != want[i] {
			t.Errorf("NVSwitch %d at %s, want %s", i, got, want[i])
		}
	}
	gb, err := Builtin("gb200-nvl-node")
	if err != nil {
		t.Fatal(err)
	}
	// The node profile leaves the domain to a cluster profile
	// (emulator/clusterprofile), which sets it per node.
	f := gb.Spec.NVLink
	if len(gb.Spec.GPUs) != 4 || f.Version != 5 || f.LinksPerGPU != 18 || f.NVSwitches != 0 || f.IMEXChannels != 8 || f.Domain != nil {
		t.Errorf("gb200-nvl-node: %d GPUs, fabric %+v", len(gb.Spec.GPUs), f)
	}
	gb.Spec.NVLink.Domain = &nvlink.Domain{ClusterUUID: "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c", CliqueID: 2}
	gb.Default()
	if errs := gb.Validate(); len(errs) > 0 || gb.Spec.NVLink.Domain.State != nvlink.StateCompleted {
		t.Errorf("gb200-nvl-node with a domain: %v, state %q", errs, gb.Spec.NVLink.Domain.State)
	}
}
