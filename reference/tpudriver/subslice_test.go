package tpudriver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"drakit.dev/drakit/internal/tpuhw"
)

func geometry(t *testing.T, topo, chip string) tpuhw.Slice {
	t.Helper()
	tb, err := tpuhw.ParseBounds(topo)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := tpuhw.ParseBounds(chip)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tpuhw.NewSlice(tb, cb)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func defaultShapes(t *testing.T) []string {
	t.Helper()
	s, err := ParseShapes(DefaultShapes)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlanSubslices(t *testing.T) {
	for _, tc := range []struct {
		topo, chip  string
		shapes      string
		want        int
		sets        int
		first, last string
	}{
		// The conformance profile: 4 hosts stacked along z, z wraps.
		{"2x2x4", "2x2x1", DefaultShapes, 5, 1, "sub-2x2x2-0-0-0", "sub-2x2x4-0-0-0"},
		// 16 hosts of 2x2x1: 2x2x2 at host-aligned origins x,y in {0,2},
		// every z; 2x2x4 at x,y in {0,2}; the full torus.
		{"4x4x4", "2x2x1", DefaultShapes, 21, 1, "sub-2x2x2-0-0-0", "sub-4x4x4-0-0-0"},
		// 4x4x4 does not fit 2x2x4: only the shapes that fit.
		{"2x2x4", "2x2x1", "4x4x4,2x2x2", 4, 1, "sub-2x2x2-0-0-0", "sub-2x2x2-0-0-3"},
		// 64 host planes of one host: two sets of 32 planes.
		{"2x2x64", "2x2x1", "2x2x2", 64, 2, "sub-2x2x2-0-0-0", "sub-2x2x2-0-0-63"},
	} {
		shapes, err := ParseShapes(tc.shapes)
		if err != nil {
			t.Fatal(err)
		}
		g := geometry(t, tc.topo, tc.chip)
		subs, cs, err := planSubslices(g, shapes)
		if err != nil {
			t.Errorf("%s: %v", tc.topo, err)
			continue
		}
		if len(subs) != tc.want || cs.sets != tc.sets {
			t.Errorf("%s %s: %d sub-slices in %d counter sets, want %d in %d", tc.topo, tc.shapes, len(subs), cs.sets, tc.want, tc.sets)
			continue
		}
		if got := SubsliceDevice(subs[0].placement); got != tc.first {
			t.Errorf("%s: first %s, want %s", tc.topo, got, tc.first)
		}
		if got := SubsliceDevice(subs[len(subs)-1].placement); got != tc.last {
			t.Errorf("%s: last %s, want %s", tc.topo, got, tc.last)
		}
		for _, s := range subs {
			if !g.Topology.IsSubTorus(s.placement.Coords(g.Topology), s.placement.Shape) || !g.HostAligned(s.placement) {
				t.Errorf("%s: %s is not a host-aligned sub-torus", tc.topo, s.placement)
			}
		}
	}
}

func TestPlanSubslicesLimits(t *testing.T) {
	for _, tc := range []struct {
		topo, chip, shapes, err string
	}{
		// A plane of 8x8 hosts is 64 counters.
		{"16x16x8", "2x2x1", "2x2x2", "a plane of 8x8 hosts (host grid 8x8x8) is 64 counters, more than 32"},
		// 2x2x64 hosts of 4 a plane: 8 planes a set, 8 sets; the full
		// torus spans all 8.
		{"4x4x64", "2x2x1", "full", "shape 4x4x64 at 0,0,0 spans 8 counter sets of 8 host planes, a device may consume from 2"},
		// 4x4x64 hosts of one chip, 16 a plane: 2 planes a set, 32 sets.
		{"4x4x64", "1x1x1", "1x1x2", "1024 hosts (4x4x64) need 32 counter sets of 2 host planes, more than 8"},
	} {
		shapes, err := ParseShapes(tc.shapes)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = planSubslices(geometry(t, tc.topo, tc.chip), shapes)
		if !errors.Is(err, ErrLimits) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %s: %v, want ErrLimits with %q", tc.topo, tc.shapes, err, tc.err)
		}
	}
	// Not whole hosts.
	_, _, err := planSubslices(geometry(t, "2x2x4", "2x2x1"), []string{"1x2x2"})
	if err == nil || !strings.Contains(err.Error(), "not a whole number of hosts") {
		t.Errorf("shape 1x2x2: %v", err)
	}
	if _, err := ParseShapes("2x2x2,4x4"); err != nil {
		t.Errorf("ParseShapes: %v", err)
	}
	if _, err := ParseShapes("2x2x2,huge"); err == nil {
		t.Error("ParseShapes(huge) succeeded")
	}
}

func TestSubslicePool(t *testing.T) {
	info := sliceInfo{name: "torus-a", generation: "v5p", geometry: geometry(t, "2x2x4", "2x2x1"),
		nodes: map[int]string{0: "127.0.0.1", 1: "127.0.0.2", 2: "127.0.0.3", 3: "127.0.0.4"}}
	pool, err := subslicePool(DefaultDriverName, info, defaultShapes(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.Slices) != 2 || len(pool.Slices[0].Devices) != 0 || len(pool.Slices[1].Devices) != 5 {
		t.Fatalf("pool slices: %+v", pool.Slices)
	}
	cs := pool.Slices[0].SharedCounters
	if len(cs) != 1 || cs[0].Name != "planes-0-3" || len(cs[0].Counters) != 4 {
		t.Fatalf("counter sets %+v", cs)
	}
	var wrapped *int
	for i, d := range pool.Slices[1].Devices {
		if d.Name == "sub-2x2x2-0-0-3" {
			wrapped = &i
		}
	}
	if wrapped == nil {
		t.Fatal("no sub-2x2x2-0-0-3")
	}
	d := pool.Slices[1].Devices[*wrapped]
	terms := d.NodeSelector.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != "kubernetes.io/hostname" {
		t.Fatalf("node selector %+v: want one term with one kubernetes.io/hostname expression", terms)
	}
	nodes := terms[0].MatchExpressions[0].Values
	if !slices.Equal(nodes, []string{"127.0.0.1", "127.0.0.4"}) {
		t.Errorf("sub-2x2x2-0-0-3 on %v, want hosts 0 and 3", nodes)
	}
	one := func(name string) bool {
		q := d.ConsumesCounters[0].Counters[name].Value
		return q.Value() == 1
	}
	if len(d.ConsumesCounters) != 1 || len(d.ConsumesCounters[0].Counters) != 2 || !one("host-0") || !one("host-3") {
		t.Errorf("consumes %+v", d.ConsumesCounters)
	}
	if v := *d.Attributes[DefaultDriverName+"/shape"].StringValue; v != "2x2x2" {
		t.Errorf("shape %s", v)
	}
	if v := *d.Attributes[DefaultDriverName+"/uuid"].StringValue; v != "TPU-SUB-torus-a-sub-2x2x2-0-0-3" {
		t.Errorf("uuid %s, want TPU-SUB-torus-a-sub-2x2x2-0-0-3", v)
	}
	uuids := map[string]string{}
	for _, dev := range pool.Slices[1].Devices {
		u := *dev.Attributes[DefaultDriverName+"/uuid"].StringValue
		if other, dup := uuids[u]; dup {
			t.Errorf("devices %s and %s share uuid %s", other, dev.Name, u)
		}
		uuids[u] = dev.Name
	}
	// A host missing: only the sub-slices without it.
	delete(info.nodes, 2)
	pool, err = subslicePool(DefaultDriverName, info, defaultShapes(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range pool.Slices[1].Devices {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"sub-2x2x2-0-0-0", "sub-2x2x2-0-0-3"}) {
		t.Errorf("without worker 2: %v", names)
	}
}

func TestDeviceNames(t *testing.T) {
	p := tpuhw.Placement{Origin: tpuhw.Coord{X: 2, Y: 0, Z: 3}, Shape: tpuhw.Bounds{X: 2, Y: 2, Z: 2}}
	name := SubsliceDevice(p)
	if name != "sub-2x2x2-2-0-3" {
		t.Fatalf("SubsliceDevice = %s", name)
	}
	back, err := ParseSubsliceDevice(name)
	if err != nil || back != p {
		t.Errorf("ParseSubsliceDevice(%s) = %v, %v", name, back, err)
	}
	for _, bad := range []string{"chip-0", "sub-2x2x2-0-0", "sub-2x2-0-0-x", "sub-0x2x2-0-0-0", "sub-2x2x2--1-0-0"} {
		if _, err := ParseSubsliceDevice(bad); err == nil {
			t.Errorf("ParseSubsliceDevice(%s) succeeded", bad)
		}
	}
	if i, ok := parseChipDevice("chip-3"); !ok || i != 3 {
		t.Errorf("parseChipDevice(chip-3) = %d, %v", i, ok)
	}
	for _, bad := range []string{"chip-", "chip-01", "chip--1", "sub-1"} {
		if _, ok := parseChipDevice(bad); ok {
			t.Errorf("parseChipDevice(%s) succeeded", bad)
		}
	}
}
