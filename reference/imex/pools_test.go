package imex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

const (
	testDriver = "gpu.drakit.dev"
	domain     = "5f0c6a7e-2d41-4b8e-9a3c-71e2d4b6f801"
)

// nodeSlice is a node's GPU slice: GPUs with clique (none when empty).
func nodeSlice(node, clique string, gpus int) resourceapi.ResourceSlice {
	s := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: testDriver, NodeName: ptr.To(node),
		Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	s.Name = node + "-gpu"
	for i := range gpus {
		d := resourceapi.Device{Name: "gpu-" + string(rune('0'+i)), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To("gpu")},
		}}
		if clique != "" {
			d.Attributes["nvlinkClique"] = resourceapi.DeviceAttribute{StringValue: ptr.To(clique)}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

func TestCliquesAndResources(t *testing.T) {
	t.Parallel()
	other := nodeSlice("127.0.0.9", domain+".1", 1)
	other.Spec.Driver = "other.example.com"
	cliques := Cliques(testDriver, []resourceapi.ResourceSlice{
		nodeSlice("127.0.0.2", domain+".1", 4), nodeSlice("127.0.0.1", domain+".1", 4),
		nodeSlice("127.0.0.3", domain+".2", 4), nodeSlice("127.0.0.4", domain+".2", 4),
		nodeSlice("127.0.0.5", "", 8), other,
	})
	want := map[string][]string{
		domain + ".1": {"127.0.0.1", "127.0.0.2"},
		domain + ".2": {"127.0.0.3", "127.0.0.4"},
	}
	if diff := cmp.Diff(want, cliques); diff != "" {
		t.Fatalf("cliques (-want +got):\n%s", diff)
	}
	res := Resources(cliques, 8)
	if len(res.Pools) != 2 {
		t.Fatalf("%d pools, want 2", len(res.Pools))
	}
	pool, ok := res.Pools["imex-1-5f0c6a7e"]
	if !ok {
		t.Fatalf("no pool imex-1-5f0c6a7e: %v", res.Pools)
	}
	// The API allows one term, and a metadata.name field selector with one
	// value only: the hostname label, In the clique's nodes.
	if terms := pool.NodeSelector.NodeSelectorTerms; len(terms) != 1 || len(terms[0].MatchFields) != 0 || len(terms[0].MatchExpressions) != 1 {
		t.Fatalf("node selector terms %+v: want one term with one expression", terms)
	}
	sel := pool.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0]
	if sel.Key != "kubernetes.io/hostname" || sel.Operator != "In" || !cmp.Equal(sel.Values, []string{"127.0.0.1", "127.0.0.2"}) {
		t.Errorf("node selector %+v", sel)
	}
	devs := pool.Slices[0].Devices
	if len(pool.Slices) != 1 || len(devs) != 8 || devs[3].Name != "channel-3" || *devs[3].Attributes["channel"].IntValue != 3 ||
		*devs[3].Attributes["type"].StringValue != "imex-channel" || *devs[3].Attributes["nvlinkClique"].StringValue != domain+".1" {
		t.Errorf("devices %+v", devs)
	}
	if big := Resources(cliques, 2048).Pools["imex-2-5f0c6a7e"]; len(big.Slices) != 16 {
		t.Errorf("2048 channels in %d slices, want 16 of 128", len(big.Slices))
	}
	if r := Resources(map[string][]string{"not-a-clique": {"n"}}, 8); len(r.Pools) != 0 {
		t.Errorf("a clique that does not parse got a pool: %v", r.Pools)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Channels, c.DeviceClass = 0, "Bad_Class"
	if err := c.Validate(); err == nil {
		t.Error("channels 0 and a bad class name accepted")
	}
}
