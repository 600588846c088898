package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// nodeOpsSteps are KEP-5945's (optional node operations): ResourceSlices of
// the test driver, which has no kubelet plugin anywhere, that let the
// kubelet skip NodePrepareResources and NodeUnprepareResources, and what the
// API server, the scheduler and the kubelet do with them. The test driver's
// single devices published on a node are shared with the KEP-5007 steps
// (steps_binding.go).
func (w *world) nodeOpsSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver with skipNodeOperations (\[.*\]) is submitted$`, Fn: w.submitSliceSkipping},
		{Pattern: `^the test driver publishes device "([^"]+)" on a node(?: with skipNodeOperations (\[.*\]))?$`, Fn: w.publishNodeDevice},
		{Pattern: `^the claim "([^"]+)" is allocated the test driver's device "([^"]+)" with skipNodeOperations (\[.*\])$`, Fn: w.claimAllocatedSkipping},
		{Pattern: `^the node of pod "([^"]+)" declares the feature "([^"]+)"$`, Fn: w.podNodeDeclaresFeature},
		{Pattern: `^pod "([^"]+)" is scheduled but does not start because the kubelet reports "([^"]+)"$`, Fn: w.podFailsPrepare},
	}
}

// parseList reads a step's list argument, a JSON array of strings such as
// ["NodePrepareResources", "*"]; [] is the empty list.
func parseList(arg string) ([]string, error) {
	var list []string
	if err := json.Unmarshal([]byte(arg), &list); err != nil {
		return nil, fmt.Errorf("parse list %s (want a JSON array of strings such as [\"a\", \"b\"]): %w", arg, err)
	}
	return list, nil
}

func skipOperations(list []string) []resourceapi.SkipNodeOperation {
	var ops []resourceapi.SkipNodeOperation
	for _, s := range list {
		ops = append(ops, resourceapi.SkipNodeOperation(s))
	}
	return ops
}

// plainTestDevice is a device of the test driver with only its role, the
// name selectors find it by.
func plainTestDevice(role string) resourceapi.Device {
	return resourceapi.Device{Name: role, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		kit.TestRoleAttribute: {StringValue: ptr.To(role)},
	}}
}

// submitSliceSkipping submits a one-device slice of the test driver that
// skips the listed node operations, for the API server to judge.
func (w *world) submitSliceSkipping(ctx context.Context, name, list string) error {
	ops, err := parseList(list)
	if err != nil {
		return err
	}
	s := w.TestSlice(name, name, 1)
	s.Spec.Devices = []resourceapi.Device{plainTestDevice("plain")}
	s.Spec.SkipNodeOperations = skipOperations(ops)
	w.SubmitSlice(ctx, s)
	return nil
}

// publishNodeDevice publishes a one-device pool of the test driver on a
// node (testNode) that skips the listed node operations, if any.
func (w *world) publishNodeDevice(ctx context.Context, device, list string) error {
	var ops []string
	if list != "" {
		var err error
		if ops, err = parseList(list); err != nil {
			return err
		}
	}
	return w.publishTestNodeDevice(ctx, device, func(s *resourceapi.ResourceSlice) {
		s.Spec.SkipNodeOperations = skipOperations(ops)
	})
}

// publishTestNodeDevice publishes device, as a pool of its own named after
// it, in a slice of the test driver on testNode, edited by edit, and makes
// sure the scenario's DeviceClass of the test driver exists. A pool on
// one node, not allNodes: the kubelet of that node is the one that decides
// whether the device needs a kubelet plugin.
func (w *world) publishTestNodeDevice(ctx context.Context, device string, edit func(*resourceapi.ResourceSlice)) error {
	if _, err := w.TestDeviceClass(ctx); err != nil {
		return err
	}
	node, err := w.testNode(ctx)
	if err != nil {
		return err
	}
	s := w.TestSlice(device, device, 1)
	s.Spec.AllNodes = nil
	s.Spec.NodeName = ptr.To(node)
	d := plainTestDevice(device)
	d.Attributes[kit.TestScenarioAttribute] = resourceapi.DeviceAttribute{StringValue: ptr.To(w.Ns)}
	s.Spec.Devices = []resourceapi.Device{d}
	edit(s)
	return w.CreateSlice(ctx, s)
}

// testNode is the node the test driver's node-local devices are published
// on: the first Ready, schedulable node by name.
func (w *world) testNode(ctx context.Context) (string, error) {
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	var ready []string
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("no Ready, schedulable node among the cluster's %d nodes for the test driver's devices", len(nodes.Items))
	}
	slices.Sort(ready)
	return ready[0], nil
}

// allocatedTestDevice returns the claim and its one allocation result, which
// must be the test driver's device.
func (w *world) allocatedTestDevice(ctx context.Context, claim, device string) (*resourceapi.ResourceClaim, resourceapi.DeviceRequestAllocationResult, error) {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return nil, resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return nil, resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s is not allocated, expected the test driver's device %s", claim, device)
	}
	got := c.Status.Allocation.Devices.Results
	if len(got) != 1 || got[0].Driver != kit.TestDriverName || got[0].Device != device {
		return nil, resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s is allocated %s, expected only the test driver's device %s", claim, kit.ResultIDs(got), device)
	}
	return c, got[0], nil
}

// claimAllocatedSkipping checks that the allocation result carries the
// slice's skipNodeOperations, as the scheduler copies them.
func (w *world) claimAllocatedSkipping(ctx context.Context, claim, device, list string) error {
	want, err := parseList(list)
	if err != nil {
		return err
	}
	_, r, err := w.allocatedTestDevice(ctx, claim, device)
	if err != nil {
		return err
	}
	got := make([]string, 0, len(r.SkipNodeOperations))
	for _, op := range r.SkipNodeOperations {
		got = append(got, string(op))
	}
	if !slices.Equal(kit.SortedCopy(got), kit.SortedCopy(want)) {
		return fmt.Errorf("claim %s: the result for device %s has skipNodeOperations %q, expected %q (a copy of its slice's)", claim, device, got, want)
	}
	return nil
}

// podNodeDeclaresFeature checks node.status.declaredFeatures of the pod's
// node (KEP-5328 node declared features): the scheduler places a pod whose
// claim skips node operations only on a node that declares
// DRAOptionalNodeOperations.
func (w *world) podNodeDeclaresFeature(ctx context.Context, pod, feature string) error {
	p, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", pod, err)
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not bound to a node", pod)
	}
	n, err := w.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", p.Spec.NodeName, err)
	}
	if !slices.Contains(n.Status.DeclaredFeatures, feature) {
		return fmt.Errorf("node %s of pod %s does not declare feature %s; it declares %q", n.Name, pod, feature, n.Status.DeclaredFeatures)
	}
	return nil
}

// failedPrepareReason is the reason of the kubelet's event when
// NodePrepareResources cannot be called or fails.
const failedPrepareReason = "FailedPrepareDynamicResources"

// podFailsPrepare waits for the pod to be bound and for the kubelet's
// FailedPrepareDynamicResources event about it whose message contains text;
// the pod must still be Pending with no container started.
func (w *world) podFailsPrepare(ctx context.Context, pod, text string) error {
	if err := w.PodScheduled(ctx, pod); err != nil {
		return err
	}
	var seen []string
	err := kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("a %s event of pod %s saying %q", failedPrepareReason, pod, text), func(ctx context.Context) (bool, string, error) {
		events, err := w.podEvents(ctx, pod)
		if err != nil {
			return false, err.Error(), nil
		}
		seen = seen[:0]
		for _, e := range events {
			if e.Reason == failedPrepareReason && strings.Contains(e.Message, text) {
				return true, "", nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprintf("events: %s", strings.Join(seen, "; ")), nil
	})
	if err != nil {
		return err
	}
	p, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", pod, err)
	}
	if p.Status.Phase != corev1.PodPending {
		return fmt.Errorf("pod %s: the kubelet reported %q, but the pod is %s, expected Pending", pod, text, kit.DescribePod(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return fmt.Errorf("pod %s: the kubelet reported %q, but its container %s started", pod, text, cs.Name)
		}
	}
	return nil
}

// podEvents lists the events about the scenario's pod.
func (w *world) podEvents(ctx context.Context, pod string) ([]corev1.Event, error) {
	list, err := w.Kube.CoreV1().Events(w.Ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.SelectorFromSet(fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list events of pod %s: %w", pod, err)
	}
	return list.Items, nil
}
