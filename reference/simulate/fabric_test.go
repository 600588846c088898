package simulate

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
)

const conformanceUUID = "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c"

// tpu qualifies a TPU driver attribute, as the TPU driver publishes them.
func tpu(name string) resourceapi.QualifiedName {
	return resourceapi.QualifiedName(TPUDriverName + "/" + name)
}

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
			if str(d, "nvlinkClique") != wantClique || str(d, "nvlinkClusterUUID") != conformanceUUID {
				t.Errorf("%s %s: nvlinkClique %q nvlinkClusterUUID %q, want %q", node, d.Name, str(d, "nvlinkClique"), str(d, "nvlinkClusterUUID"), wantClique)
			}
		}
		chips, ok := pools[poolKey{TPUDriverName, node}]
		if !ok {
			t.Fatalf("no TPU pool for %s", node)
		}
		var coords []string
		for _, d := range devices(chips) {
			if str(d, tpu("type")) != "chip" || str(d, tpu("generation")) != "v5p" || str(d, tpu("slice")) != "torus-a" || str(d, tpu("topology")) != "2x2x4" ||
				num(d, tpu("workerID")) != int64(i) || str(d, "resource.kubernetes.io/pcieRoot") == "" {
				t.Errorf("%s %s: attributes %v", node, d.Name, d.Attributes)
			}
			coords = append(coords, strings.Join([]string{d.Name, string(rune('0' + num(d, tpu("x")))), string(rune('0' + num(d, tpu("y")))), string(rune('0' + num(d, tpu("z"))))}, ","))
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
		if len(devs) != 8 || devs[7].Name != "channel-7" || str(devs[7], "type") != "imex-channel" ||
			num(devs[7], "channel") != 7 || str(devs[7], "nvlinkClique") != conformanceUUID+"."+id {
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
		if str(d, tpu("type")) != "subslice" || str(d, tpu("slice")) != "torus-a" || num(d, tpu("chips")) != int64(4*len(hosts[d.Name])) {
			t.Errorf("%s: attributes %v", d.Name, d.Attributes)
		}
	}
	// The TPU driver's default shapes 2x2x2, 2x2x4 and full (2x2x4 again);
	// z is 4 long, a ring, so 2x2x2 also wraps from z 3 to z 0.
	want := []string{"sub-2x2x2-0-0-0", "sub-2x2x2-0-0-1", "sub-2x2x2-0-0-2", "sub-2x2x2-0-0-3", "sub-2x2x4-0-0-0"}
	if !slices.Equal(names, want) {
		t.Errorf("sub-slices %v, want %v", names, want)
	}
	if got := hosts["sub-2x2x2-0-0-2"]; !slices.Equal(got, []string{"127.0.0.3", "127.0.0.4"}) {
		t.Errorf("sub-2x2x2-0-0-2 on hosts %v, want 127.0.0.3 and 127.0.0.4", got)
	}
	if got := hosts["sub-2x2x2-0-0-3"]; !slices.Equal(got, []string{"127.0.0.1", "127.0.0.4"}) {
		t.Errorf("sub-2x2x2-0-0-3 (wrapping around z) on hosts %v, want 127.0.0.1 and 127.0.0.4", got)
	}
	if s := sub.pool.Slices[0]; len(s.SharedCounters) != 1 || s.SharedCounters[0].Name != "planes-0-3" || len(s.SharedCounters[0].Counters) != 4 || s.PerDeviceNodeSelection == nil || !*s.PerDeviceNodeSelection {
		t.Errorf("sub-slice counter slice %+v, want one set planes-0-3 of 4 host counters", s)
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
	if res.Nodes != 4 || res.Pools != 11 || res.Devices != 4*4+4*4+2*8+5 {
		t.Errorf("result %+v, want 4 nodes, 11 pools, 53 devices", res)
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
	if !strings.Contains(out.String(), "Built 11 pools for 4 nodes (cluster profile conformance-fabric: 12 slices, 53 devices)") {
		t.Errorf("output:\n%s", out.String())
	}
	cfg.GPUsPerNode = 8
	if err := cfg.Validate(); err == nil {
		t.Error("GPUsPerNode with ClusterProfile accepted")
	}
}
