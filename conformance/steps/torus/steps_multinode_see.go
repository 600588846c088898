package torus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cucumber/godog"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/internal/tpuhw"
)

// podsOnEachNodeSee judges what the pods on the nodes of the multi-node
// device see, each against the ground truth of its own node: a torus
// sub-slice by each host's emulator ground truth (podsSeeSubslice), any
// other device by the DRA contract, which the kit reads on one node only
// (podsSeeByContract). It never passes a pod it could not judge.
func (w *world) podsOnEachNodeSee(ctx context.Context) (context.Context, error) {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return ctx, err
	}
	if _, pods := m.NodePods(); len(pods) == 0 {
		return ctx, fmt.Errorf("no pods on the nodes of the multi-node device (a step must create them first)")
	}
	if m.Subslice {
		return w.podsSeeSubslice(ctx, m)
	}
	return w.podsSeeByContract(ctx, m)
}

// podsSeeByContract checks the DRA contract for the pod on the node whose
// kubelet state and CDI specs the kit reads (Config.NodeName). The same
// claim is prepared on every node of the device, so that node's state says
// nothing about a pod elsewhere: a pod on another node, or any pod when
// the kit does not know which node it reads, leaves the scenario skipped
// (after the findings of the pods it did judge).
func (w *world) podsSeeByContract(ctx context.Context, m *kit.MultiNodeDevice) (context.Context, error) {
	nodes, pods := m.NodePods()
	var bad, unjudged []string
	for i, name := range pods {
		if w.Cfg.NodeName == "" || nodes[i] != w.Cfg.NodeName {
			unjudged = append(unjudged, fmt.Sprintf("%s on %s", name, nodes[i]))
			continue
		}
		var err error
		ctx, err = w.PodSeesAllocatedDevices(ctx, name)
		switch {
		case err == nil:
		case errors.Is(err, godog.ErrSkip):
			return ctx, err
		default:
			bad = append(bad, err.Error())
		}
	}
	if len(bad) == 0 && len(unjudged) > 0 {
		reads := "an unnamed node (no --node-name)"
		if w.Cfg.NodeName != "" {
			reads = "node " + w.Cfg.NodeName
		}
		return kit.Skip(ctx, fmt.Sprintf("the kit reads the kubelet state and CDI specs of %s only, so it cannot judge what pods %s see", reads, strings.Join(unjudged, ", ")))
	}
	return ctx, kit.Findings(bad)
}

// podsSeeSubslice judges a torus sub-slice (whole hosts, dra-1.37-spec.md
// §6 item 4) by each host's ground truth: the pod on each host sees exactly
// that host's chips, and the chips of all the hosts the device's node
// selection names form one connected sub-torus of the device's shape in
// one slice; so a node selection that names the wrong hosts, or a pod that
// sees another host's chip numbers or a chip too few or too many, fails.
func (w *world) podsSeeSubslice(ctx context.Context, m *kit.MultiNodeDevice) (context.Context, error) {
	a, ok := observe.LookupAttribute(m.Device.Attributes, w.Driver.DriverName, w.Driver.TorusShapeAttribute)
	if !ok || a.StringValue == nil {
		return ctx, fmt.Errorf("sub-slice %s publishes no shape attribute %s", m.Device.ID(), w.Driver.TorusShapeAttribute)
	}
	shape, err := tpuhw.ParseBounds(*a.StringValue)
	if err != nil {
		return ctx, fmt.Errorf("sub-slice %s: shape attribute %s: %w", m.Device.ID(), w.Driver.TorusShapeAttribute, err)
	}
	hosts := map[string]*tpuhw.HostFile{}
	for _, node := range m.Hosts {
		if hosts[node], err = w.hostFile(node); err != nil {
			return ctx, err
		}
	}
	bad := subsliceHostsFindings(m.Device.ID(), shape, hosts)
	var lines []string
	_, pods := m.NodePods()
	for _, name := range pods {
		seen, f, problems, err := w.podChips(ctx, name)
		if err != nil {
			return ctx, err
		}
		bad = append(bad, problems...)
		bad = append(bad, hostChipFindings(name, seen, f)...)
		lines = append(lines, name+":", joinSeen(seen))
	}
	return kit.AttachText(ctx, "chips seen on each host of "+m.Device.ID(), strings.Join(lines, "\n")), kit.Findings(bad)
}

// hostChipFindings compares the chips a pod sees (mapped through its
// host's ground truth f) with all the chips of that host.
func hostChipFindings(pod string, seen []seenChip, f *tpuhw.HostFile) []string {
	var got, want []string
	for _, c := range seen {
		got = append(got, c.chip.Accel)
	}
	for _, c := range f.Chips {
		want = append(want, c.Accel)
	}
	slices.Sort(got)
	slices.Sort(want)
	if slices.Equal(got, want) {
		return nil
	}
	return []string{fmt.Sprintf("pod %s sees chips %v, its host (worker %d of %q) has %v", pod, got, f.WorkerID, f.Slice, want)}
}

// subsliceHostsFindings checks that the hosts of a sub-slice, by node, are
// of one slice and that all their chips form one connected sub-torus of
// shape there.
func subsliceHostsFindings(device string, shape tpuhw.Bounds, hosts map[string]*tpuhw.HostFile) []string {
	var bad []string
	var coords []tpuhw.Coord
	var topology tpuhw.Bounds
	first := ""
	for _, node := range slices.Sorted(maps.Keys(hosts)) {
		f := hosts[node]
		g, err := f.SliceGeometry()
		if err != nil {
			bad = append(bad, fmt.Sprintf("sub-slice %s: node %s: %v", device, node, err))
			continue
		}
		switch {
		case first == "":
			first, topology = node, g.Topology
		case f.Slice != hosts[first].Slice || g.Topology != topology:
			bad = append(bad, fmt.Sprintf("sub-slice %s: node %s's host is in slice %q (%s), node %s's in %q (%s)", device, node, f.Slice, g.Topology, first, hosts[first].Slice, topology))
			continue
		}
		for _, c := range f.Chips {
			coords = append(coords, c.Coord())
		}
	}
	if len(bad) > 0 {
		return bad
	}
	switch {
	case len(coords) != shape.Chips():
		bad = append(bad, fmt.Sprintf("sub-slice %s of shape %s: the hosts of its nodes %v have %d chips, the shape %d", device, shape, slices.Sorted(maps.Keys(hosts)), len(coords), shape.Chips()))
	case !topology.Connected(coords):
		bad = append(bad, fmt.Sprintf("sub-slice %s: the chips of the hosts of its nodes %v are not connected in the %s torus", device, slices.Sorted(maps.Keys(hosts)), topology))
	case !topology.IsSubTorus(coords, shape):
		bad = append(bad, fmt.Sprintf("sub-slice %s: the chips of the hosts of its nodes %v are not a %s sub-torus of the %s torus", device, slices.Sorted(maps.Keys(hosts)), shape, topology))
	}
	return bad
}
