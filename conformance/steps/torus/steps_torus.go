package torus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/internal/tpuhw"
)

// torusSteps check a driver of chips in a 3D torus (the declaration's
// torus section): what the containers of a claim see, mapped to torus
// coordinates through each host's ground truth (tpuhw.HostFile below the
// node's emulator root), never through the driver's attributes. The steps
// are generic over nodes: a sub-slice's pods run one per host of the
// claim's allocation.
func (w *world) torusSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver declares a torus$`, Fn: w.declaresTorus, Needs: kit.NeedsExclusive},
		{Pattern: `^a ResourceClaim "([^"]+)" for all the chips of one host$`, Fn: w.claimHostChips},
		{Pattern: `^a ResourceClaim "([^"]+)" for a sub-slice of shape "([^"]+)"$`, Fn: w.claimSubslice},
		{Pattern: `^pods "([^"]+)" run on every host of the claim "([^"]+)"$`, Fn: w.podsOnEveryHost},
		{Pattern: `^the chips pod "([^"]+)" sees are exactly the chips of its host$`, Fn: w.podSeesItsHost},
		{Pattern: `^the chips the pods "([^"]+)" see form a connected "([^"]+)" sub-torus$`, Fn: w.podsSeeSubTorus},
		{Pattern: `^the chips the pods "([^"]+)" see and the chips the pods "([^"]+)" see are disjoint$`, Fn: w.podsSeeDisjoint},
		{Pattern: `^the pods "([^"]+)" get the TPU runtime environment of a "([^"]+)" sub-slice$`, Fn: w.podsGetRuntimeEnv},
		// KEP-4815's multi-node devices: each node's pods judged against
		// that node's ground truth, a torus sub-slice's by its hosts'.
		{Pattern: `^the pods on each node of the multi-node device see exactly the devices allocated to their claims$`, Fn: w.podsOnEachNodeSee},
	}
}

// torusState is what the torus steps remember: the pods of each group
// ("pods "sub" run on every host"), by group name.
type torusState struct {
	groups map[string][]string
}

const torusSkipReason = report.NotDeclaredPrefix + "the driver declares no torus (the torus section of its declaration)"

// declaresTorus is the features' first step: it skips an @emulator
// scenario on real hardware (the ground truth is the emulator's), and every
// scenario of a driver that declares no torus.
func (w *world) declaresTorus(ctx context.Context) (context.Context, error) {
	if w.Driver.Hardware && kit.HasTag(w.Scenario, kit.EmulatorTag) {
		return kit.Skip(ctx, kit.HardwareSkipReason)
	}
	if w.Driver.TorusChipClassName == "" || w.Driver.TorusSubsliceClassName == "" {
		return kit.Skip(ctx, torusSkipReason)
	}
	for _, class := range []string{w.Driver.TorusChipClassName, w.Driver.TorusSubsliceClassName} {
		if _, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{}); err != nil {
			return ctx, fmt.Errorf("get the torus DeviceClass %s: %w", class, err)
		}
	}
	return ctx, nil
}

// claimHostChips asks for as many chips as the node with the fewest chips
// publishes: node-local devices of one claim share a node, so they are all
// of one host's chips.
func (w *world) claimHostChips(ctx context.Context, name string) (context.Context, error) {
	devices, err := w.ClassDevices(ctx, w.Driver.TorusChipClassName)
	if err != nil {
		return ctx, err
	}
	perNode := map[string]int{}
	for _, d := range devices {
		perNode[d.Node]++
	}
	fewest := 0
	for _, n := range perNode {
		if fewest == 0 || n < fewest {
			fewest = n
		}
	}
	if fewest == 0 {
		return ctx, fmt.Errorf("no node publishes a device of DeviceClass %s", w.Driver.TorusChipClassName)
	}
	return ctx, w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.TorusChipClassName, int64(fewest))))
}

// claimSubslice asks for one sub-slice whose shape attribute is shape.
func (w *world) claimSubslice(ctx context.Context, name, shape string) error {
	if _, err := tpuhw.ParseBounds(shape); err != nil {
		return fmt.Errorf("the scenario's shape: %w", err)
	}
	domain, id := observe.SplitAttribute(w.Driver.DriverName, w.Driver.TorusShapeAttribute)
	sel := fmt.Sprintf("device.attributes[%q].?%s.orValue(\"\") == %q", domain, id, shape)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.TorusSubsliceClassName, 1, sel)))
}

// podsOnEveryHost runs pod <group>-0 with the claim, which allocates it,
// then one more pod with the claim on each other node the allocation
// selects (node affinity on metadata.name), and waits for all to run.
func (w *world) podsOnEveryHost(ctx context.Context, group, claim string) error {
	first := group + "-0"
	if err := w.CreatePod(ctx, first, []kit.PodClaim{{Name: claim, Claim: claim}}); err != nil {
		return err
	}
	if err := w.PodIsRunning(ctx, first); err != nil {
		return err
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", first, err)
	}
	c, _, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return err
	}
	hosts, err := allocationNodes(c)
	if err != nil {
		return err
	}
	if !slices.Contains(hosts, pod.Spec.NodeName) {
		return fmt.Errorf("pod %s runs on node %s, which claim %s's allocation does not select (%v)", first, pod.Spec.NodeName, claim, hosts)
	}
	names := []string{first}
	for _, host := range hosts {
		if host == pod.Spec.NodeName {
			continue
		}
		name := group + "-" + strconv.Itoa(len(names))
		p := kit.ProbePod(w.Suite, name, []kit.PodClaim{{Name: claim, Claim: claim}})
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
			}}},
		}}
		if err := w.CreateProbePod(ctx, p); err != nil {
			return err
		}
		names = append(names, name)
	}
	for _, name := range names[1:] {
		if err := w.PodIsRunning(ctx, name); err != nil {
			return err
		}
	}
	if w.torus.groups == nil {
		w.torus.groups = map[string][]string{}
	}
	w.torus.groups[group] = names
	return nil
}

// allocationNodes are the nodes an allocation's node selector names: per
// term (terms are ORed) the values of metadata.name or
// kubernetes.io/hostname In.
func allocationNodes(c *resourceapi.ResourceClaim) ([]string, error) {
	sel := c.Status.Allocation.NodeSelector
	if sel == nil || len(sel.NodeSelectorTerms) == 0 {
		return nil, fmt.Errorf("claim %s: the allocation selects no nodes (nodeSelector %v)", c.Name, sel)
	}
	var out []string
	for _, term := range sel.NodeSelectorTerms {
		n := len(out)
		for _, r := range slices.Concat(term.MatchFields, term.MatchExpressions) {
			if (r.Key == "metadata.name" || r.Key == corev1.LabelHostname) && r.Operator == corev1.NodeSelectorOpIn {
				out = append(out, r.Values...)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("claim %s: a term of the allocation's node selector names no node: %v", c.Name, term)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// seenChip is a chip a container sees, as its host's ground truth places it.
type seenChip struct {
	node string
	chip tpuhw.Chip
}

func (c seenChip) String() string {
	return fmt.Sprintf("%s %s at %s", c.node, c.chip.Accel, c.chip.Coord())
}

// hostFile reads the ground truth of node's TPU host.
func (w *world) hostFile(node string) (*tpuhw.HostFile, error) {
	root := w.Cfg.EmulatorRootOf(node)
	if root == "" {
		return nil, fmt.Errorf("the kit knows no emulator root of node %s (NodeEmulatorRoots, or NodeEmulatorRoot for the one node): it cannot read the host's ground truth", node)
	}
	path := filepath.Join(root, tpuhw.HostFileRelativePath)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node %s: read the TPU ground truth: %w", node, err)
	}
	f, err := tpuhw.ReadHostFile(data)
	if err != nil {
		return nil, fmt.Errorf("node %s: %s: %w", node, path, err)
	}
	return f, nil
}

// podChips maps the accel device nodes the pod's probe saw to the chips of
// its host's ground truth; a node the ground truth does not know, or one
// with another device number, is a finding.
func (w *world) podChips(ctx context.Context, name string) ([]seenChip, *tpuhw.HostFile, []string, error) {
	p, err := w.Pod(name)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.Report == nil {
		return nil, nil, nil, fmt.Errorf("pod %s: no probe report (a step must wait for it to run first)", name)
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("get pod %s: %w", name, err)
	}
	f, err := w.hostFile(pod.Spec.NodeName)
	if err != nil {
		return nil, nil, nil, err
	}
	var out []seenChip
	var bad []string
	for _, d := range p.Report.Devices {
		if !strings.HasPrefix(d.Path, "/dev/accel") {
			continue
		}
		c, ok := f.ChipByDevice(d.Path)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("pod %s on %s sees %s, which is no chip of its host", name, pod.Spec.NodeName, d.Path))
		case d.Major != tpuhw.AccelMajor || d.Minor != uint32(c.Index):
			bad = append(bad, fmt.Sprintf("pod %s on %s sees %s as %d:%d, the host's chip %d is %d:%d", name, pod.Spec.NodeName, d.Path, d.Major, d.Minor, c.Index, tpuhw.AccelMajor, c.Index))
		default:
			out = append(out, seenChip{node: pod.Spec.NodeName, chip: c})
		}
	}
	return out, f, bad, nil
}

func (w *world) podSeesItsHost(ctx context.Context, name string) (context.Context, error) {
	seen, f, bad, err := w.podChips(ctx, name)
	if err != nil {
		return ctx, err
	}
	var got []string
	for _, c := range seen {
		got = append(got, c.chip.Accel)
	}
	var want []string
	for _, c := range f.Chips {
		want = append(want, c.Accel)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		bad = append(bad, fmt.Sprintf("pod %s sees chips %v, its host (worker %d of %q) has %v", name, got, f.WorkerID, f.Slice, want))
	}
	return kit.AttachText(ctx, "chips seen", joinSeen(seen)), kit.Findings(bad)
}

// groupChips are the chips the pods of group see, each chip once per pod.
func (w *world) groupChips(ctx context.Context, group string) ([]seenChip, tpuhw.Bounds, []string, error) {
	names, ok := w.torus.groups[group]
	if !ok {
		return nil, tpuhw.Bounds{}, nil, fmt.Errorf("pods %q: the scenario started no such group (a step must run them first)", group)
	}
	var all []seenChip
	var bad []string
	var topology tpuhw.Bounds
	slice := ""
	for i, name := range names {
		seen, f, problems, err := w.podChips(ctx, name)
		if err != nil {
			return nil, tpuhw.Bounds{}, nil, err
		}
		bad = append(bad, problems...)
		g, err := f.SliceGeometry()
		if err != nil {
			return nil, tpuhw.Bounds{}, nil, err
		}
		if i == 0 {
			topology, slice = g.Topology, f.Slice
		} else if g.Topology != topology || f.Slice != slice {
			bad = append(bad, fmt.Sprintf("pod %s's host is in slice %q (%s), pod %s's in %q (%s)", name, f.Slice, g.Topology, names[0], slice, topology))
		}
		all = append(all, seen...)
	}
	return all, topology, bad, nil
}

func (w *world) podsSeeSubTorus(ctx context.Context, group, shape string) (context.Context, error) {
	want, err := tpuhw.ParseBounds(shape)
	if err != nil {
		return ctx, fmt.Errorf("the scenario's shape: %w", err)
	}
	seen, topology, bad, err := w.groupChips(ctx, group)
	if err != nil {
		return ctx, err
	}
	coords := make([]tpuhw.Coord, 0, len(seen))
	for _, c := range seen {
		coords = append(coords, c.chip.Coord())
	}
	switch {
	case len(coords) != want.Chips():
		bad = append(bad, fmt.Sprintf("the pods %q see %d chips, a %s sub-slice has %d", group, len(coords), want, want.Chips()))
	case !topology.Connected(coords):
		bad = append(bad, fmt.Sprintf("the chips the pods %q see are not connected in the %s torus", group, topology))
	case !topology.IsSubTorus(coords, want):
		bad = append(bad, fmt.Sprintf("the chips the pods %q see are not a %s sub-torus of the %s torus", group, want, topology))
	}
	return kit.AttachText(ctx, "chips seen by "+group, joinSeen(seen)), kit.Findings(bad)
}

func (w *world) podsSeeDisjoint(ctx context.Context, a, b string) (context.Context, error) {
	seenA, _, badA, err := w.groupChips(ctx, a)
	if err != nil {
		return ctx, err
	}
	seenB, _, badB, err := w.groupChips(ctx, b)
	if err != nil {
		return ctx, err
	}
	bad := append(badA, badB...)
	inA := map[tpuhw.Coord]bool{}
	for _, c := range seenA {
		inA[c.chip.Coord()] = true
	}
	for _, c := range seenB {
		if inA[c.chip.Coord()] {
			bad = append(bad, fmt.Sprintf("the pods %q and %q both see the chip at %s (%s)", a, b, c.chip.Coord(), c))
		}
	}
	return ctx, kit.Findings(bad)
}

// podsGetRuntimeEnv checks the environment a TPU runtime reads in each pod
// of group against the shape and what the pods see: TPU_TOPOLOGY the
// shape, TPU_WORKER_ID a distinct index per pod (0..hosts-1),
// TPU_WORKER_HOSTNAMES the same list in every pod with the pod's own node
// at its worker id, TPU_VISIBLE_CHIPS the accel indexes the pod sees.
func (w *world) podsGetRuntimeEnv(ctx context.Context, group, shape string) (context.Context, error) {
	names, ok := w.torus.groups[group]
	if !ok {
		return ctx, fmt.Errorf("pods %q: the scenario started no such group (a step must run them first)", group)
	}
	var bad, lines []string
	ids := map[string]string{}
	hostnames := ""
	for _, name := range names {
		seen, _, _, err := w.podChips(ctx, name)
		if err != nil {
			return ctx, err
		}
		p, _ := w.Pod(name)
		env := p.Report.Env
		node := ""
		var indexes []int
		for _, c := range seen {
			node = c.node
			indexes = append(indexes, c.chip.Index)
		}
		slices.Sort(indexes)
		visible := make([]string, len(indexes))
		for i, n := range indexes {
			visible[i] = strconv.Itoa(n)
		}
		lines = append(lines, fmt.Sprintf("%s on %s: TPU_TOPOLOGY=%s TPU_WORKER_ID=%s TPU_WORKER_HOSTNAMES=%s TPU_VISIBLE_CHIPS=%s",
			name, node, env[tpuhw.EnvTopology], env[tpuhw.EnvWorkerID], env[tpuhw.EnvWorkerHostnames], env[tpuhw.EnvVisibleChips]))
		if env[tpuhw.EnvTopology] != shape {
			bad = append(bad, fmt.Sprintf("pod %s: %s=%q, want %q", name, tpuhw.EnvTopology, env[tpuhw.EnvTopology], shape))
		}
		if got, want := env[tpuhw.EnvVisibleChips], strings.Join(visible, ","); got != want {
			bad = append(bad, fmt.Sprintf("pod %s: %s=%q, it sees chips %q", name, tpuhw.EnvVisibleChips, got, want))
		}
		id, list := env[tpuhw.EnvWorkerID], env[tpuhw.EnvWorkerHostnames]
		if other, dup := ids[id]; dup {
			bad = append(bad, fmt.Sprintf("pods %s and %s both have %s=%s", other, name, tpuhw.EnvWorkerID, id))
		}
		ids[id] = name
		if hostnames == "" {
			hostnames = list
		} else if list != hostnames {
			bad = append(bad, fmt.Sprintf("pod %s: %s=%q, pod %s has %q", name, tpuhw.EnvWorkerHostnames, list, names[0], hostnames))
		}
		hosts := strings.Split(list, ",")
		if i, err := strconv.Atoi(id); err != nil || i < 0 || i >= len(hosts) || len(hosts) != len(names) || hosts[i] != node {
			bad = append(bad, fmt.Sprintf("pod %s on %s: %s=%q does not name its node among %s=%q of %d hosts", name, node, tpuhw.EnvWorkerID, id, tpuhw.EnvWorkerHostnames, list, len(names)))
		}
	}
	return kit.AttachText(ctx, "runtime environment of "+group, strings.Join(lines, "\n")), kit.Findings(bad)
}

func joinSeen(seen []seenChip) string {
	lines := make([]string, len(seen))
	for i, c := range seen {
		lines[i] = c.String()
	}
	return strings.Join(lines, "\n")
}
