package tpudriver

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/internal/tpuhw"
)

// ErrLimits is wrapped by the errors of planSubslices when a slice's
// sub-slices cannot be published within the ResourceSlice limits.
var ErrLimits = errors.New("sub-slices exceed the ResourceSlice limits")

// Limits of resource.k8s.io/v1 the sub-slice pool is planned within
// (dra-1.37-spec.md §0.3).
const (
	maxCounterSets         = 8  // sharedCounters per slice
	maxCountersPerSet      = 32 // counters per counter set
	maxConsumesPerDevice   = 2  // consumesCounters entries per device
	maxDevicesWithCounters = 64 // devices per slice when any consumes counters
)

// ShapeFull in the shapes list stands for the slice's whole topology.
const ShapeFull = "full"

// ParseShapes parses a comma-separated shapes list: XxYxZ bounds or "full".
func ParseShapes(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f != ShapeFull {
			if _, err := tpuhw.ParseBounds(f); err != nil {
				return nil, fmt.Errorf("shape %q: %w", f, err)
			}
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// sliceInfo is a multi-host slice as the controller assembles it from the
// node pools.
type sliceInfo struct {
	name       string
	generation string
	geometry   tpuhw.Slice
	// nodes maps worker id to node name; hosts not seen are missing.
	nodes map[int]string
}

// The sub-slice pool's exclusivity design: a sub-slice is whole hosts
// (host-aligned placements only), so two overlapping sub-slices share a
// host, and a counter per host (host-<worker>, value 1) that each sub-slice
// consumes keeps them apart. The counters are grouped into counter sets by
// host z-planes: a set holds as many whole planes of hosts as fit in 32
// counters (planes-<first>-<last>). A sub-slice consumes from the sets its
// hosts are in; at most 2 entries per device means a sub-slice may span
// the planes of at most two sets. Limits that follow, each rejected with
// ErrLimits naming the shape or the slice: a plane of hosts (hostBounds
// X*Y) of at most 32 hosts; at most 8 sets, so at most 8*32 = 256 hosts
// when planes fill sets; and a shape spanning at most two sets' planes
// (with 2x2x1 hosts on a 4x4xZ torus, 4 hosts a plane, 8 planes a set: a
// sub-slice up to 8 host planes deep, any sub-slice of a torus up to 16
// planes deep, is fine). Devices go in slices of at most 64, the counters
// in a slice of their own.

// counterSets groups the hosts of g by z-planes of hosts.
type counterSets struct {
	planesPerSet int
	sets         int
}

func planCounterSets(g tpuhw.Slice) (counterSets, error) {
	hb := g.HostBounds()
	plane := hb.X * hb.Y
	if plane > maxCountersPerSet {
		return counterSets{}, fmt.Errorf("%w: a plane of %dx%d hosts (host grid %s) is %d counters, more than %d in a counter set",
			ErrLimits, hb.X, hb.Y, hb, plane, maxCountersPerSet)
	}
	per := maxCountersPerSet / plane
	sets := (hb.Z + per - 1) / per
	if sets > maxCounterSets {
		return counterSets{}, fmt.Errorf("%w: %d hosts (%s) need %d counter sets of %d host planes, more than %d",
			ErrLimits, hb.Chips(), hb, sets, per, maxCounterSets)
	}
	return counterSets{planesPerSet: per, sets: sets}, nil
}

func (c counterSets) setOf(g tpuhw.Slice, worker int) int {
	return g.HostBounds().Coord(worker).Z / c.planesPerSet
}

func (c counterSets) name(g tpuhw.Slice, set int) string {
	first := set * c.planesPerSet
	last := min(first+c.planesPerSet, g.HostBounds().Z) - 1
	return fmt.Sprintf("planes-%d-%d", first, last)
}

func hostCounter(worker int) string { return fmt.Sprintf("host-%d", worker) }

// resolveShapes turns the configured shapes into bounds for slice g: "full"
// is the topology; duplicates go. A shape that is not whole hosts is an
// error; a shape that does not fit g is left out (it has no placements).
func resolveShapes(g tpuhw.Slice, shapes []string) ([]tpuhw.Bounds, error) {
	var out []tpuhw.Bounds
	for _, s := range shapes {
		b := g.Topology
		if s != ShapeFull {
			var err error
			if b, err = tpuhw.ParseBounds(s); err != nil {
				return nil, err
			}
		}
		if !g.ChipBounds.Divides(b) {
			return nil, fmt.Errorf("shape %s is not a whole number of hosts of %s chips (a host's own chips are its node pool's devices)", b, g.ChipBounds)
		}
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out, nil
}

// subslice is one published placement.
type subslice struct {
	placement tpuhw.Placement
	workers   []int
}

// planSubslices lists the host-aligned placements of the shapes in g and
// checks them against the limits.
func planSubslices(g tpuhw.Slice, shapes []string) ([]subslice, counterSets, error) {
	cs, err := planCounterSets(g)
	if err != nil {
		return nil, cs, err
	}
	bounds, err := resolveShapes(g, shapes)
	if err != nil {
		return nil, cs, err
	}
	var out []subslice
	for _, shape := range bounds {
		for _, p := range g.Topology.Placements(shape) {
			if !g.HostAligned(p) {
				continue
			}
			ws := g.HostsOf(p)
			sets := map[int]bool{}
			for _, w := range ws {
				sets[cs.setOf(g, w)] = true
			}
			if len(sets) > maxConsumesPerDevice {
				return nil, cs, fmt.Errorf("%w: shape %s at %s spans %d counter sets of %d host planes, a device may consume from %d",
					ErrLimits, shape, p.Origin, len(sets), cs.planesPerSet, maxConsumesPerDevice)
			}
			out = append(out, subslice{placement: p, workers: ws})
		}
	}
	return out, cs, nil
}

// subslicePool builds the pool slice-<name>: a slice with the counter
// sets, then the sub-slices whose hosts are all known, at most 64 a slice,
// each with its hosts' node selector. It returns nil when no sub-slice has
// all its hosts.
func subslicePool(driver string, s sliceInfo, shapes []string) (*resourceslice.Pool, error) {
	subs, cs, err := planSubslices(s.geometry, shapes)
	if err != nil {
		return nil, fmt.Errorf("plan sub-slices of slice %s: %w", s.name, err)
	}
	counters := make([]resourceapi.CounterSet, cs.sets)
	for set := range counters {
		counters[set] = resourceapi.CounterSet{Name: cs.name(s.geometry, set), Counters: map[string]resourceapi.Counter{}}
	}
	for w := range s.geometry.Hosts() {
		counters[cs.setOf(s.geometry, w)].Counters[hostCounter(w)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	var devices []resourceapi.Device
	for _, sub := range subs {
		nodes := make([]string, 0, len(sub.workers))
		for _, w := range sub.workers {
			if n, ok := s.nodes[w]; ok {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) != len(sub.workers) {
			continue
		}
		devices = append(devices, subsliceDevice(driver, s, sub, nodes, cs))
	}
	if len(devices) == 0 {
		return nil, nil
	}
	pool := &resourceslice.Pool{Slices: []resourceslice.Slice{{SharedCounters: counters, PerDeviceNodeSelection: ptr.To(true)}}}
	for chunk := range slices.Chunk(devices, maxDevicesWithCounters) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk, PerDeviceNodeSelection: ptr.To(true)})
	}
	return pool, nil
}

func subsliceDevice(driver string, s sliceInfo, sub subslice, nodes []string, cs counterSets) resourceapi.Device {
	q := func(name string) resourceapi.QualifiedName { return resourceapi.QualifiedName(driver + "/" + name) }
	p := sub.placement
	name := SubsliceDevice(p)
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		q(AttrType):       {StringValue: ptr.To(TypeSubslice)},
		q(AttrUUID):       {StringValue: ptr.To(SubsliceUUID(s.name, name))},
		q(AttrShape):      {StringValue: ptr.To(p.Shape.String())},
		q(AttrSlice):      {StringValue: ptr.To(s.name)},
		q(AttrTopology):   {StringValue: ptr.To(s.geometry.Topology.String())},
		q(AttrGeneration): {StringValue: ptr.To(s.generation)},
		q(AttrX):          {IntValue: ptr.To(int64(p.Origin.X))},
		q(AttrY):          {IntValue: ptr.To(int64(p.Origin.Y))},
		q(AttrZ):          {IntValue: ptr.To(int64(p.Origin.Z))},
		q(AttrChips):      {IntValue: ptr.To(int64(p.Shape.Chips()))},
		q(AttrHosts):      {IntValue: ptr.To(int64(len(sub.workers)))},
	}
	bySet := map[int]map[string]resourceapi.Counter{}
	for _, w := range sub.workers {
		set := cs.setOf(s.geometry, w)
		if bySet[set] == nil {
			bySet[set] = map[string]resourceapi.Counter{}
		}
		bySet[set][hostCounter(w)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	var consumes []resourceapi.DeviceCounterConsumption
	for set := range cs.sets {
		if c, ok := bySet[set]; ok {
			consumes = append(consumes, resourceapi.DeviceCounterConsumption{CounterSet: cs.name(s.geometry, set), Counters: c})
		}
	}
	return resourceapi.Device{Name: name, Attributes: attrs, ConsumesCounters: consumes, NodeSelector: nodesSelector(nodes)}
}

// nodesSelector selects exactly nodes by their kubernetes.io/hostname
// label (In nodes), in one term: the DRA allocator takes a device node
// selector of one term only, and a node field selector (metadata.name) of
// one value only. It relies on each node's hostname label being its name,
// which the kubelet sets unless --hostname-override differs from the node
// name.
func nodesSelector(nodes []string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}},
	}}}
}
