package nodeselection

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
)

// multiHostSteps are about devices that are not local to one node
// (KEP-4815's per-device node selection, dra-1.37-spec.md §1 item 10 and
// §6 item 4): what the API server accepts as a slice's and a device's node
// selection, how the scheduler allocates a device that names its own
// nodes (with pools of the kit's test driver), and a device of the driver
// under test that several nodes share, used by a pod on each of them.
func (w *world) multiHostSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver whose node selection (.+) is submitted$`, Fn: w.submitSliceNodeSelection},
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with perDeviceNodeSelection and devices for a nodeName, a nodeSelector and allNodes is submitted$`, Fn: w.submitSlicePerDevice},
		{Pattern: `^the ResourceSlice "([^"]+)" of the test driver keeps each device's node selection$`, Fn: w.sliceKeepsPerDevice},
		{Pattern: `^the test driver publishes a pool "([^"]+)" with perDeviceNodeSelection: device "([^"]+)" whose node selector picks a node of the cluster and device "([^"]+)" on a node that does not exist$`, Fn: w.publishPerDevicePool},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the test driver's device "([^"]+)"$`, Fn: w.claimTestDriverRole},
		{Pattern: `^the claim "([^"]+)" is allocated the test driver's device "([^"]+)" with the node selector the device names$`, Fn: w.claimAllocatedPerDevice},
		{Pattern: `^the cluster has at least (\d+) nodes$`, Fn: w.clusterHasNodes},
		{Pattern: `^the driver publishes a device available on at least (\d+) nodes$`, Fn: w.driverPublishesMultiNodeDevice, Needs: kit.NeedsExclusive},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the multi-node device$`, Fn: w.claimMultiNodeDevice},
		{Pattern: `^a pod on each node of the multi-node device is created with the claim "([^"]+)"$`, Fn: w.podsOnEachNode},
		{Pattern: `^the pods on each node of the multi-node device are running$`, Fn: w.podsOnEachNodeRun},
		{Pattern: `^the claim "([^"]+)" is allocated the multi-node device once, for all of its nodes$`, Fn: w.claimAllocatedMultiNode},
		{Pattern: `^the claim "([^"]+)" is reserved for the pods on each node of the multi-node device$`, Fn: w.claimReservedForNodePods},
	}
}

// bareTestSlice is a one-device slice of the test driver without any node
// selection.
func (w *world) bareTestSlice(name string) *resourceapi.ResourceSlice {
	s := w.TestSlice(name, name, 1)
	s.Spec.AllNodes = nil
	s.Spec.Devices = []resourceapi.Device{{Name: "d0"}}
	return s
}

func (w *world) submitSliceNodeSelection(ctx context.Context, name, selection string) error {
	edit, ok := kit.SliceNodeSelections[selection]
	if !ok {
		known := slices.Sorted(func(yield func(string) bool) {
			for k := range kit.SliceNodeSelections {
				if !yield(strconv.Quote(k)) {
					return
				}
			}
		})
		return fmt.Errorf("unknown node selection %q; the kit knows %s", selection, strings.Join(known, ", "))
	}
	s := w.bareTestSlice(name)
	edit(s)
	w.SubmitSlice(ctx, s)
	return nil
}

// perDeviceSlice is a valid slice with perDeviceNodeSelection: devices
// by-name, by-selector and everywhere.
func (w *world) perDeviceSlice(name string) *resourceapi.ResourceSlice {
	s := w.bareTestSlice(name)
	s.Spec.PerDeviceNodeSelection = ptr.To(true)
	s.Spec.Devices = []resourceapi.Device{
		{Name: "by-name", NodeName: ptr.To(kit.MissingNodeName)},
		{Name: "by-selector", NodeSelector: kit.HostnameSelector(kit.MissingNodeName)},
		{Name: "everywhere", AllNodes: ptr.To(true)},
	}
	return s
}

func (w *world) submitSlicePerDevice(ctx context.Context, name string) error {
	w.SubmitSlice(ctx, w.perDeviceSlice(name))
	return nil
}

// sliceKeepsPerDevice compares the stored slice with what the kit
// submitted: an API server whose DRAPartitionableDevices gate is off drops
// the fields instead of storing them.
func (w *world) sliceKeepsPerDevice(ctx context.Context, name string) error {
	want := w.perDeviceSlice(name)
	got, err := w.Kube.ResourceV1().ResourceSlices().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ResourceSlice %s: %w", want.Name, err)
	}
	var bad []string
	if !ptr.Deref(got.Spec.PerDeviceNodeSelection, false) {
		bad = append(bad, fmt.Sprintf("ResourceSlice %s: perDeviceNodeSelection is not stored as true (DRAPartitionableDevices off?)", got.Name))
	}
	if len(got.Spec.Devices) != len(want.Spec.Devices) {
		return fmt.Errorf("ResourceSlice %s stores %d devices, the kit submitted %d", got.Name, len(got.Spec.Devices), len(want.Spec.Devices))
	}
	for i, d := range want.Spec.Devices {
		g := got.Spec.Devices[i]
		if !apiequality.Semantic.DeepEqual([]any{g.NodeName, g.NodeSelector, g.AllNodes}, []any{d.NodeName, d.NodeSelector, d.AllNodes}) {
			bad = append(bad, fmt.Sprintf("ResourceSlice %s: device %s stores nodeName %v, nodeSelector %v, allNodes %v; the kit submitted %v, %v, %v",
				got.Name, d.Name, ptr.Deref(g.NodeName, "-"), g.NodeSelector, ptr.Deref(g.AllNodes, false), ptr.Deref(d.NodeName, "-"), d.NodeSelector, ptr.Deref(d.AllNodes, false)))
		}
	}
	return kit.Findings(bad)
}

// aNode returns a node of the cluster that is Ready, the first by name.
func (w *world) aNode(ctx context.Context) (*corev1.Node, error) {
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for i := range nodes.Items {
		for _, c := range nodes.Items[i].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return &nodes.Items[i], nil
			}
		}
	}
	return nil, fmt.Errorf("none of the cluster's %d nodes is Ready", len(nodes.Items))
}

// publishPerDevicePool publishes a one-slice pool of the test driver with
// perDeviceNodeSelection: device here selects a Ready node by its hostname
// label, device nowhere names a node that does not exist.
func (w *world) publishPerDevicePool(ctx context.Context, pool, here, nowhere string) error {
	node, err := w.aNode(ctx)
	if err != nil {
		return err
	}
	hostname, ok := node.Labels[kit.HostnameLabel]
	if !ok {
		return fmt.Errorf("node %s has no label %s, which the kubelet sets", node.Name, kit.HostnameLabel)
	}
	if _, err := w.TestDeviceClass(ctx); err != nil {
		return err
	}
	s := w.bareTestSlice(pool + "-devices")
	s.Spec.Pool.Name = w.TestObjectName(pool)
	s.Spec.PerDeviceNodeSelection = ptr.To(true)
	s.Spec.Devices = []resourceapi.Device{
		{Name: here, NodeSelector: kit.HostnameSelector(hostname)},
		{Name: nowhere, NodeName: ptr.To(kit.MissingNodeName)},
	}
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			kit.TestRoleAttribute:     {StringValue: ptr.To(s.Spec.Devices[i].Name)},
			kit.TestScenarioAttribute: {StringValue: ptr.To(w.Ns)},
		}
	}
	return w.CreateSlice(ctx, s)
}

// testRoleSelector selects the test driver's device with the role.
func testRoleSelector(role string) string {
	return fmt.Sprintf(`device.attributes[%s].?role.orValue("") == %s`, strconv.Quote(kit.TestDriverName), strconv.Quote(role))
}

func (w *world) claimTestDriverRole(ctx context.Context, name, role string) error {
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(class, 1, testRoleSelector(role))))
}

// claimAllocatedPerDevice checks that the claim got the test driver's
// device and that its allocation is restricted to the nodes the device's
// own nodeSelector picks (the slice's perDeviceNodeSelection), which
// include the node of the pod the scheduler bound.
func (w *world) claimAllocatedPerDevice(ctx context.Context, claim, device string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated, expected the test driver's device %s", claim, device)
	}
	got := kit.DriverResults(c, kit.TestDriverName)
	if len(got) != 1 || got[0].Device != device {
		return fmt.Errorf("claim %s is allocated %s of the test driver, expected %s", claim, kit.ResultIDs(got), device)
	}
	sl, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list ResourceSlices: %w", err)
	}
	var want *corev1.NodeSelector
	for _, s := range sl.Items {
		if s.Spec.Driver != kit.TestDriverName || s.Spec.Pool.Name != got[0].Pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == device {
				want = d.NodeSelector
			}
		}
	}
	if want == nil {
		return fmt.Errorf("claim %s: the test driver's device %s/%s has no nodeSelector in its slice", claim, got[0].Pool, device)
	}
	if !apiequality.Semantic.DeepEqual(c.Status.Allocation.NodeSelector, want) {
		return fmt.Errorf("claim %s: allocation.nodeSelector is %v, expected the device's own nodeSelector %v", claim, c.Status.Allocation.NodeSelector, want)
	}
	return nil
}

// clusterHasNodes skips the scenario on a cluster with fewer nodes.
func (w *world) clusterHasNodes(ctx context.Context, n int) (context.Context, error) {
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) < n {
		return kit.Skip(ctx, fmt.Sprintf("the cluster has %d node(s), the scenario needs %d", len(nodes.Items), n))
	}
	return ctx, nil
}

// driverPublishesMultiNodeDevice picks the first device (by pool and name)
// of the driver's multiNodeClasses that at least n nodes can use and that
// has an identity; it skips the scenario when there is none.
func (w *world) driverPublishesMultiNodeDevice(ctx context.Context, n int) (context.Context, error) {
	nodeList, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list nodes: %w", err)
	}
	sl, err := w.DriverSlices(ctx)
	if err != nil {
		return ctx, err
	}
	classes := w.Driver.MultiNodeClasses()
	var found []*kit.MultiNodeDevice
	picked := map[string]bool{}
	for _, class := range classes {
		inClass, err := w.ClassDevices(ctx, class)
		if err != nil {
			return ctx, err
		}
		for _, s := range sl {
			for _, d := range s.Spec.Devices {
				pd, ok := kit.FindDevice(inClass, s.Spec.Pool.Name, d.Name)
				if !ok || picked[pd.ID()] {
					continue
				}
				a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.UUIDAttribute)
				if !ok || a.StringValue == nil || *a.StringValue == "" {
					continue
				}
				nodes, err := kit.DeviceNodes(s, d, nodeList.Items)
				if err != nil {
					return ctx, err
				}
				if len(nodes) >= n {
					picked[pd.ID()] = true
					found = append(found, &kit.MultiNodeDevice{Device: pd, Class: class, Subslice: class == w.Driver.TorusSubsliceClassName,
						Identity: *a.StringValue, Hosts: nodes, Nodes: nodes[:n], Pods: map[string]string{}})
				}
			}
		}
	}
	if len(found) == 0 {
		return kit.Skip(ctx, fmt.Sprintf("no device of DeviceClass %s (driver %s) with identity attribute %s is available on %d of the cluster's %d nodes",
			strings.Join(classes, " or "), w.Driver.DriverName, w.Driver.UUIDAttribute, n, len(nodeList.Items)))
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Device.ID() < found[j].Device.ID() })
	w.MultiNode = found[0]
	return ctx, nil
}

func (w *world) claimMultiNodeDevice(ctx context.Context, name string) error {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return err
	}
	sel := kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, m.Identity)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(m.Class, 1, sel)))
}

// podsOnEachNode creates one probe pod per node of the multi-node device,
// each with the claim and required to run on its node.
func (w *world) podsOnEachNode(ctx context.Context, claim string) error {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return err
	}
	for i, node := range m.Nodes {
		pod := kit.ProbePod(w.Suite, fmt.Sprintf("%s-user-%d", claim, i), []kit.PodClaim{{Name: claim, Claim: claim}})
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: kit.NodeNameSelector(node)}}
		if err := w.CreateProbePod(ctx, pod); err != nil {
			return err
		}
		m.Pods[node] = pod.Name
	}
	return nil
}

func (w *world) podsOnEachNodeRun(ctx context.Context) error {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return err
	}
	nodes, pods := m.NodePods()
	if len(pods) == 0 {
		return fmt.Errorf("no pods on the nodes of the multi-node device (a step must create them first)")
	}
	var bad []string
	for i, name := range pods {
		if err := w.PodIsRunning(ctx, name); err != nil {
			return err
		}
		got, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get pod %s: %w", name, err)
		}
		if got.Spec.NodeName != nodes[i] {
			bad = append(bad, fmt.Sprintf("pod %s runs on node %s, expected %s", name, got.Spec.NodeName, nodes[i]))
		}
	}
	return kit.Findings(bad)
}

// claimAllocatedMultiNode checks that the claim holds exactly the
// multi-node device and that its allocation lets every node of the
// device's pods use it.
func (w *world) claimAllocatedMultiNode(ctx context.Context, claim string) error {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated, expected the multi-node device %s", claim, m.Device.ID())
	}
	got := kit.DriverResults(c, w.Driver.DriverName)
	if len(got) != 1 || got[0].Pool != m.Device.Pool || got[0].Device != m.Device.Name {
		return fmt.Errorf("claim %s is allocated %s, expected only the multi-node device %s", claim, kit.ResultIDs(got), m.Device.ID())
	}
	var bad []string
	if sel := c.Status.Allocation.NodeSelector; sel != nil {
		matcher, err := nodeaffinity.NewNodeSelector(sel)
		if err != nil {
			return fmt.Errorf("claim %s: allocation.nodeSelector: %w", claim, err)
		}
		nodes, _ := m.NodePods()
		for _, n := range nodes {
			node, err := w.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get node %s: %w", n, err)
			}
			if !matcher.Match(node) {
				bad = append(bad, fmt.Sprintf("claim %s: allocation.nodeSelector %v does not select node %s, where the device is available", claim, sel, n))
			}
		}
	}
	return kit.Findings(bad)
}

func (w *world) claimReservedForNodePods(ctx context.Context, claim string) error {
	m, err := w.TheMultiNodeDevice()
	if err != nil {
		return err
	}
	_, pods := m.NodePods()
	return w.ClaimReservedFor(ctx, claim, pods)
}
