package simulate

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
)

const conformanceUUID = "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c"

func conformancePools(t *testing.T) map[poolKey]simulatedNode {
	t.Helper()
	c, err := LoadCluster("conformance-fabric")
	if err != nil {
		t.Fatal(err)
	}
	pools, err := clusterPools(t.Context(), c, "gpu.drakit.dev", false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[poolKey]simulatedNode{}
	for _, p := range pools {
		if _, dup := out[p.key()]; dup {
			t.Fatalf("pool %v twice", p.key())
		}
		out[p.key()] = p
	}
	return out
}

func devices(p simulatedNode) []resourceapi.Device {
	var out []resourceapi.Device
	for _, s := range p.pool.Slices {
		out = append(out, s.Devices...)
	}
	return out
}

func str(d resourceapi.Device, name resourceapi.QualifiedName) string {
	if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func num(d resourceapi.Device, name resourceapi.QualifiedName) int64 {
	if a, ok := d.Attributes[name]; ok && a.IntValue != nil {
		return *a.IntValue
	}
	return -1
}

// TestClusterPools checks the pools of conformance-fabric against the
// fabric contract's names.
func TestClusterPools(t *testing.T) {
	t.Parallel()
	pools := conformancePools(t)
	if len(pools) != 4+4+2+1 {
		t.Errorf("%d pools, want 4 GPU, 4 TPU chip, 2 IMEX and 1 sub-slice pool", len(pools))
	}
	for i, node := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		gpu, ok := pools[poolKey{"gpu.drakit.dev", node}]
		if !ok {
			t.Fatalf("no GPU pool for %s", node)
		}
		wantClique := conformanceUUID + "." + string(rune('1'+i/2))
		devs := devices(gpu)
		if len(devs) != 4 {
			t.Errorf("%s: %d GPUs, want 4", node, len(devs))
		}
		for _, d := range devs {
			if str(d, AttrNVLinkClique) != wantClique || str(d, AttrNVLinkClusterUUID) != conformanceUUID {
				t.Errorf("%s %s: nvlinkClique %q nvlinkClusterUUID %q, want %q", node, d.Name, str(d, AttrNVLinkClique), str(d, AttrNVLinkClusterUUID), wantClique)
			}
		}
		chips, ok := pools[poolKey{TPUDriverName, node}]
		if !ok {
			t.Fatalf("no TPU pool for %s", node)
		}
		var coords []string
		for _, d := range devices(chips) {
			if str(d, "generation") != "v5p" || str(d, "slice") != "torus-a" || str(d, "topology") != "2x2x4" || num(d, "workerID") != int64(i) {
				t.Errorf("%s %s: attributes %v", node, d.Name, d.Attributes)
			}
			coords = append(coords, strings.Join([]string{d.Name, string(rune('0' + num(d, "x"))), string(rune('0' + num(d, "y"))), string(rune('0' + num(d, "z")))}, ","))
		}
		z := string(rune('0' + i))
		if want := []string{"chip-0,0,0," + z, "chip-1,1,0," + z, "chip-2,0,1," + z, "chip-3,1,1," + z}; !slices.Equal(coords, want) {
			t.Errorf("%s chips %v, want %v", node, coords, want)
		}
	}
	for id, nodes := range map[string][]string{"1": {"127.0.0.1", "127.0.0.2"}, "2": {"127.0.0.3", "127.0.0.4"}} {
		imex, ok := pools[poolKey{"gpu.drakit.dev", "imex-" + id + "-5f0c7a3e"}]
		if !ok {
			t.Fatalf("no IMEX pool for clique %s", id)
		}
		if got := imex.pool.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Values; !slices.Equal(got, nodes) {
			t.Errorf("IMEX pool of clique %s selects %v, want %v", id, got, nodes)
		}
		devs := devices(imex)
		if len(devs) != 8 || devs[7].Name != "channel-7" || str(devs[7], "type") != DeviceTypeIMEXChannel ||
			num(devs[7], "channel") != 7 || str(devs[7], AttrNVLinkClique) != conformanceUUID+"."+id {
			t.Errorf("IMEX pool of clique %s: %d devices, last %+v", id, len(devs), devs[len(devs)-1])
		}
	}
	sub, ok := pools[poolKey{TPUDriverName, "slice-torus-a"}]
	if !ok {
		t.Fatal("no sub-slice pool slice-torus-a")
	}
	var names []string
	hosts := map[string][]string{}
	for _, d := range devices(sub) {
		names = append(names, d.Name)
		term := d.NodeSelector.NodeSelectorTerms[0]
		if len(term.MatchFields) > 0 {
			hosts[d.Name] = term.MatchFields[0].Values
		} else {
			hosts[d.Name] = term.MatchExpressions[0].Values
		}
		if str(d, "type") != DeviceTypeSubslice || str(d, "slice") != "torus-a" || num(d, "chips") != int64(4*len(hosts[d.Name])) {
			t.Errorf("%s: attributes %v", d.Name, d.Attributes)
		}
	}
	want := []string{"sub-2x2x4-0-0-0", "sub-2x2x2-0-0-0", "sub-2x2x2-0-0-1", "sub-2x2x2-0-0-2",
		"sub-2x2x1-0-0-0", "sub-2x2x1-0-0-1", "sub-2x2x1-0-0-2", "sub-2x2x1-0-0-3"}
	if !slices.Equal(names, want) {
		t.Errorf("sub-slices %v, want %v", names, want)
	}
	if got := hosts["sub-2x2x2-0-0-2"]; !slices.Equal(got, []string{"127.0.0.3", "127.0.0.4"}) {
		t.Errorf("sub-2x2x2-0-0-2 on hosts %v, want 127.0.0.3 and 127.0.0.4", got)
	}
	if s := sub.pool.Slices[0]; len(s.SharedCounters) != 1 || len(s.SharedCounters[0].Counters) != 4 || s.PerDeviceNodeSelection == nil || !*s.PerDeviceNodeSelection {
		t.Errorf("sub-slice counter slice %+v, want one set of 4 host counters", s)
	}
}

// TestSimulateClusterProfile publishes conformance-fabric through the
// publishers into a fake API server.
func TestSimulateClusterProfile(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	cfg := DefaultConfig()
	cfg.ClusterProfile, cfg.Keep = "conformance-fabric", true
	client := newSliceServer()
	var out strings.Builder
	res, err := run(ctx, cfg, shared(client), &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 4 || res.Pools != 11 || res.Devices != 4*4+4*4+2*8+8 {
		t.Errorf("result %+v, want 4 nodes, 11 pools, 56 devices", res)
	}
	drivers := map[string]int{}
	for _, slices := range listSlices(t, client) {
		for _, s := range slices {
			drivers[s.Spec.Driver]++
		}
	}
	if drivers["gpu.drakit.dev"] != 4+2 || drivers[TPUDriverName] != 4+2 {
		t.Errorf("slices per driver %v, want 6 of each (TPU: 4 chip slices, a counter slice and a device slice)", drivers)
	}
	if !strings.Contains(out.String(), "Built 11 pools for 4 nodes (cluster profile conformance-fabric: 12 slices, 56 devices)") {
		t.Errorf("output:\n%s", out.String())
	}
	cfg.GPUsPerNode = 8
	if err := cfg.Validate(); err == nil {
		t.Error("GPUsPerNode with ClusterProfile accepted")
	}
}
