package binding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"drakit.dev/drakit/conformance/kit"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// bindingSteps are KEP-5007's (device binding conditions): devices of the
// test driver, and the driver's own devices with the binding conditions it
// declares, that the scheduler may bind a pod to only once conditions of
// the device hold, the kit's attach controller that reports them on the
// claim (attach.go), and what the API server and the scheduler do.
func (w *world) bindingSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceSlice "([^"]+)" of the test driver whose device has bindingConditions (\[.*\]) and bindingFailureConditions (\[.*\]) is submitted$`, Fn: w.submitSliceBinding},
		{Pattern: `^the test driver publishes device "([^"]+)" on a node with bindingConditions (\[.*\]) and bindingFailureConditions (\[.*\]), skipping node operations (\[.*\])$`, Fn: w.publishBindingDevice},
		{Pattern: `^the test driver publishes device "([^"]+)" for all nodes, binding to the node, with bindingConditions (\[.*\]) and bindingFailureConditions (\[.*\]), skipping node operations (\[.*\])$`, Fn: w.publishBindsToNodeDevice},
		{Pattern: `^the claim "([^"]+)" is allocated the test driver's device "([^"]+)" with bindingConditions (\[.*\]), bindingFailureConditions (\[.*\]) and an allocationTimestamp$`, Fn: w.claimAllocatedBinding},
		{Pattern: `^pod "([^"]+)" stays unbound for (\d+) seconds while the scheduler waits for binding conditions$`, Fn: w.podWaitsForBinding},
		{Pattern: `^the kit's attach controller sets condition "([^"]+)" of the device of claim "([^"]+)" to (True|False)$`, Fn: w.attachSetsCondition},
		{Pattern: `^the claim "([^"]+)" loses its allocation$`, Fn: w.claimLosesAllocation},
		{Pattern: `^the scheduler reports for pod "([^"]+)" "([^"]+)"$`, Fn: w.schedulerReports},
		{Pattern: `^the allocation of the claim "([^"]+)" is restricted to the node of pod "([^"]+)"$`, Fn: w.allocationPinnedToPodNode},
		// The driver's own devices (steps_binding_driver.go).
		{Pattern: `^every device the driver publishes has the declared bindingConditions and bindingFailureConditions$`, Fn: w.driverDevicesCarryBindingConditions},
		{Pattern: `^the kit's attach controller sets the driver's binding conditions$`, Fn: w.kitAttachesDriverDevices},
		{Pattern: `^the claim "([^"]+)" is allocated a device of the driver with the declared binding conditions and an allocationTimestamp$`, Fn: w.claimAllocatedDriverBinding},
		{Pattern: `^the kit's attach controller sets every declared binding condition of the device of claim "([^"]+)" to (True|False)$`, Fn: w.attachSetsDeclaredConditions},
		{Pattern: `^the kit's attach controller sets the declared binding failure condition of the device of claim "([^"]+)" to True$`, Fn: w.attachSetsDeclaredFailure},
	}
}

// bindingDevice is a test driver device with binding conditions.
func bindingDevice(d *resourceapi.Device, conditions, failures []string) {
	d.BindingConditions = conditions
	d.BindingFailureConditions = failures
}

// submitSliceBinding submits a one-device slice of the test driver whose
// device has the lists, for the API server to judge.
func (w *world) submitSliceBinding(ctx context.Context, name, conditions, failures string) error {
	bc, err := parseList(conditions)
	if err != nil {
		return err
	}
	bfc, err := parseList(failures)
	if err != nil {
		return err
	}
	s := w.TestSlice(name, name, 1)
	s.Spec.Devices = []resourceapi.Device{plainTestDevice("attachable")}
	bindingDevice(&s.Spec.Devices[0], bc, bfc)
	w.SubmitSlice(ctx, s)
	return nil
}

// bindingArgs parses the three lists of the publishing steps.
func bindingArgs(conditions, failures, skip string) (bc, bfc []string, ops []resourceapi.SkipNodeOperation, err error) {
	if bc, err = parseList(conditions); err != nil {
		return nil, nil, nil, err
	}
	if bfc, err = parseList(failures); err != nil {
		return nil, nil, nil, err
	}
	s, err := parseList(skip)
	if err != nil {
		return nil, nil, nil, err
	}
	return bc, bfc, skipOperations(s), nil
}

// publishBindingDevice publishes the device on a node with binding
// conditions. Skipping node operations lets a pod that gets it run
// although the test driver has no kubelet plugin (KEP-5945).
func (w *world) publishBindingDevice(ctx context.Context, device, conditions, failures, skip string) error {
	bc, bfc, ops, err := bindingArgs(conditions, failures, skip)
	if err != nil {
		return err
	}
	return w.publishTestNodeDevice(ctx, device, func(s *resourceapi.ResourceSlice) {
		bindingDevice(&s.Spec.Devices[0], bc, bfc)
		s.Spec.SkipNodeOperations = ops
	})
}

// publishBindsToNodeDevice publishes the device for all nodes (a device
// any node can reach, such as a network-attached one) with bindsToNode.
func (w *world) publishBindsToNodeDevice(ctx context.Context, device, conditions, failures, skip string) error {
	bc, bfc, ops, err := bindingArgs(conditions, failures, skip)
	if err != nil {
		return err
	}
	return w.publishTestNodeDevice(ctx, device, func(s *resourceapi.ResourceSlice) {
		s.Spec.NodeName = nil
		s.Spec.AllNodes = ptr.To(true)
		s.Spec.Devices[0].BindsToNode = ptr.To(true)
		bindingDevice(&s.Spec.Devices[0], bc, bfc)
		s.Spec.SkipNodeOperations = ops
	})
}

// claimAllocatedBinding waits for the claim to be allocated the device (the
// scheduler allocates before it waits in PreBind) and checks that the
// result carries copies of the device's lists and the allocation its
// timestamp.
func (w *world) claimAllocatedBinding(ctx context.Context, claim, device, conditions, failures string) error {
	wantBC, err := parseList(conditions)
	if err != nil {
		return err
	}
	wantBFC, err := parseList(failures)
	if err != nil {
		return err
	}
	if err := w.waitAllocated(ctx, claim); err != nil {
		return err
	}
	c, r, err := w.allocatedTestDevice(ctx, claim, device)
	if err != nil {
		return err
	}
	var bad []string
	if !slices.Equal(r.BindingConditions, wantBC) {
		bad = append(bad, fmt.Sprintf("claim %s: the result for device %s has bindingConditions %q, expected %q", claim, device, r.BindingConditions, wantBC))
	}
	if !slices.Equal(r.BindingFailureConditions, wantBFC) {
		bad = append(bad, fmt.Sprintf("claim %s: the result for device %s has bindingFailureConditions %q, expected %q", claim, device, r.BindingFailureConditions, wantBFC))
	}
	if c.Status.Allocation.AllocationTimestamp == nil {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation has no allocationTimestamp", claim))
	}
	return kit.Findings(bad)
}

// waitAllocated waits for the claim to be allocated.
func (w *world) waitAllocated(ctx context.Context, claim string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "claim "+claim+" to be allocated", func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return c.Status.Allocation != nil, "not allocated", nil
	})
}

// bindingPendingReason is the reason of the scheduler's event when it
// starts waiting in PreBind for binding conditions.
const bindingPendingReason = "BindingConditionsPending"

// podWaitsForBinding waits for the scheduler's BindingConditionsPending
// event about the pod and then checks for the given time that the pod stays
// without a node.
func (w *world) podWaitsForBinding(ctx context.Context, pod string, seconds int) error {
	if err := w.waitPodEvent(ctx, pod, bindingPendingReason, ""); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		p, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get pod %s: %w", pod, err)
		}
		if p.Spec.NodeName != "" {
			return fmt.Errorf("pod %s was bound to node %s while the binding conditions of its device did not hold", pod, p.Spec.NodeName)
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped watching pod %s stay unbound: %w", pod, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// waitPodEvent waits for an event about the pod with the reason (any, for
// "") and a message that contains text.
func (w *world) waitPodEvent(ctx context.Context, pod, reason, text string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("an event %s of pod %s saying %q", reason, pod, text), func(ctx context.Context) (bool, string, error) {
		events, err := w.podEvents(ctx, pod)
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for _, e := range events {
			if (reason == "" || e.Reason == reason) && strings.Contains(e.Message, text) {
				return true, "", nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, "events: " + strings.Join(seen, "; "), nil
	})
}

// attachSetsCondition is the kit's attach controller at work: it writes
// the condition into status.devices of the claim for its allocated device.
// The claim's resource version before the write is kept, so that a later
// step can watch what the scheduler does with the claim from there.
func (w *world) attachSetsCondition(ctx context.Context, condition, claim, status string) error {
	rv, err := w.attach.setCondition(ctx, w.Kube, w.Ns, claim, metav1.Condition{
		Type: condition, Status: metav1.ConditionStatus(status),
		Reason: "KitAttachController", Message: "set by the drakit conformance kit's attach controller",
	})
	if err != nil {
		return err
	}
	w.attach.claimRV[claim] = rv
	return nil
}

// claimLosesAllocation watches the claim from the attach controller's last
// write (from now, if it wrote none) and waits for an update without an
// allocation: the scheduler clears the allocation of a device whose binding
// failed or timed out, and may allocate again right after, so a poll could
// miss it.
func (w *world) claimLosesAllocation(ctx context.Context, claim string) error {
	// After the attach controller's write of a failure condition the
	// scheduler clears the allocation at once; without one, only when its
	// binding timeout has passed since the allocation.
	rv, written := w.attach.claimRV[claim]
	wait := w.Cfg.Timeouts.PodStart
	if !written {
		wait += w.Cfg.Timeouts.SchedulerBinding
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get claim %s: %w", claim, err)
		}
		if c.Status.Allocation == nil {
			return nil
		}
		rv = c.ResourceVersion
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	wi, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", claim).String(), ResourceVersion: rv,
	})
	if err != nil {
		return fmt.Errorf("watch claim %s: %w", claim, err)
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Modified:
			if c, ok := ev.Object.(*resourceapi.ResourceClaim); ok && c.Status.Allocation == nil {
				return nil
			}
		case watch.Deleted:
			return fmt.Errorf("claim %s was deleted while the kit waited for its allocation to be cleared", claim)
		case watch.Error:
			return fmt.Errorf("watch claim %s: %v", claim, ev.Object)
		}
	}
	if written {
		return fmt.Errorf("claim %s kept its allocation for %s after the attach controller's write", claim, wait)
	}
	return fmt.Errorf("claim %s kept its allocation for %s, beyond the scheduler's binding timeout (--scheduler-binding-timeout %s)",
		claim, wait, w.Cfg.Timeouts.SchedulerBinding)
}

// schedulerReports waits for a scheduler event about the pod that says
// text (FailedScheduling, from a PreBind that gave up).
func (w *world) schedulerReports(ctx context.Context, pod, text string) error {
	return w.waitPodEvent(ctx, pod, "FailedScheduling", text)
}

// allocationPinnedToPodNode checks that the allocation's node selector
// selects exactly the pod's node by name (bindsToNode on a device that is
// available on all nodes).
func (w *world) allocationPinnedToPodNode(ctx context.Context, claim, pod string) error {
	p, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", pod, err)
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not bound to a node", pod)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated", claim)
	}
	want := kit.NodeNameSelector(p.Spec.NodeName)
	if !apiequality.Semantic.DeepEqual(c.Status.Allocation.NodeSelector, want) {
		return fmt.Errorf("claim %s: allocation.nodeSelector is %v, expected metadata.name In [%s], the node of pod %s", claim, c.Status.Allocation.NodeSelector, p.Spec.NodeName, pod)
	}
	return nil
}
