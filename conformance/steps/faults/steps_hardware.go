package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// hardwareSteps break the hardware under a claim's device through the
// fault command the driver declares (drakit's emulator supplies one: an
// Xid error of the GPU, then a reset) and check what the driver and
// Kubernetes make of it: the health in the pod's status (KEP-4680), the
// taint the driver declared (KEP-5055), the eviction of the pods that use
// a NoExecute-tainted device, and the taint's end after the reset.
func (w *world) hardwareSteps() []kit.StepDef {
	return []kit.StepDef{
		// A fault reaches every claim on the hardware (a GPU's MIG
		// devices too).
		{Pattern: `^the kit can inject hardware faults under the driver's devices$`, Fn: w.canInjectFaults, Needs: kit.NeedsExclusive},
		{Pattern: `^the hardware under the device of the claim "([^"]+)" reports the fault the driver answers with (a NoExecute taint|a NoSchedule taint|no taint)$`, Fn: w.injectDeclaredFault},
		{Pattern: `^the hardware under the device of the claim "([^"]+)" is reset$`, Fn: w.resetFaultedDevice},
		{Pattern: `^within (\d+) seconds the driver taints the device of the claim "([^"]+)" as it declares$`, Fn: w.deviceTaintedAsDeclared},
		{Pattern: `^within (\d+) seconds the device of the claim "([^"]+)" has no taint$`, Fn: w.deviceUntainted},
		{Pattern: `^the device of the claim "([^"]+)" stays without a taint for (\d+) seconds$`, Fn: w.deviceStaysUntainted},
		{Pattern: `^a ResourceClaim "([^"]+)" pinned to the device of the claim "([^"]+)"$`, Fn: w.claimPinnedLike},
	}
}

// injectedFault is the fault a scenario injected.
type injectedFault struct {
	Claim string
	// target is what the fault command's placeholders stood for and
	// result the claim's device when the fault was injected, kept for the
	// reset and the later steps: the claim may lose the device (its pod
	// evicted, the claim deallocated).
	target   declaration.FaultValues
	result   resourceapi.DeviceRequestAllocationResult
	response faultResponse
	at       time.Time
}

// noFaultResponsesReason is why the fault scenarios do not apply: without
// declared faults the kit has nothing to inject.
const noFaultResponsesReason = report.NotDeclaredPrefix + "the driver declares no hardware faults the kit may inject (deviceKinds[].faults and faultCommand, or --fault-responses)"

// canInjectFaults needs declared faults only: Validate holds the fault
// command to them.
func (w *world) canInjectFaults(ctx context.Context) (context.Context, error) {
	if len(w.Driver.FaultResponses) == 0 {
		return kit.Skip(ctx, noFaultResponsesReason)
	}
	return ctx, nil
}

// pickResponse is the first declared response with the answer.
func (w *world) pickResponse(answer string) (faultResponse, bool) {
	responses, _ := parseFaultResponses(w.Driver.FaultResponses) // Validate checked them
	for _, r := range responses {
		switch {
		case answer == "no taint" && r.taint == "" && r.health == "Healthy",
			answer == "a "+r.taint+" taint":
			return r, true
		}
	}
	return faultResponse{}, false
}

// claimDevice is the identity of the one driver device allocated to the
// claim, and its allocation result.
func (w *world) claimDevice(ctx context.Context, claim string) (string, resourceapi.DeviceRequestAllocationResult, error) {
	_, results, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return "", resourceapi.DeviceRequestAllocationResult{}, err
	}
	if len(results) != 1 {
		return "", resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s: %d devices of driver %s allocated, the fault steps need exactly 1", claim, len(results), w.Driver.DriverName)
	}
	dev, err := w.sliceDeviceOf(ctx, results[0])
	if err != nil {
		return "", results[0], err
	}
	id := kit.StringAttr(dev.Attributes, w.Driver.UUIDAttribute)
	if id == "" {
		return "", results[0], fmt.Errorf("device %s/%s of claim %s publishes no %s: the kit cannot tell which device to break", results[0].Pool, results[0].Device, claim, w.Driver.UUIDAttribute)
	}
	return id, results[0], nil
}

// deviceOfClaim is claimDevice, or for the claim the scenario broke the
// device of, that device even after the claim lost it.
func (w *world) deviceOfClaim(ctx context.Context, claim string) (string, resourceapi.DeviceRequestAllocationResult, error) {
	if w.fault != nil && w.fault.Claim == claim {
		return w.fault.target.Identity, w.fault.result, nil
	}
	return w.claimDevice(ctx, claim)
}

// faultTarget is what the fault command's placeholders stand for for the
// allocated device: its name, identity and attributes as its ResourceSlice
// publishes them, and the slice's node (or the device's, with per-device
// node selection).
func (w *world) faultTarget(ctx context.Context, r resourceapi.DeviceRequestAllocationResult) (declaration.FaultValues, error) {
	list, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + r.Driver})
	if err != nil {
		return declaration.FaultValues{}, fmt.Errorf("list the ResourceSlices of driver %s: %w", r.Driver, err)
	}
	for _, s := range list.Items {
		if s.Spec.Pool.Name != r.Pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == r.Device {
				return declaration.FaultValues{
					DeviceValues: observe.DeviceValues(w.Driver.DriverName, w.Driver.UUIDAttribute, d.Name, d.Attributes),
					Node:         ptr.Deref(s.Spec.NodeName, ptr.Deref(d.NodeName, "")),
				}, nil
			}
		}
	}
	return declaration.FaultValues{}, fmt.Errorf("device %s/%s/%s is in no ResourceSlice", r.Driver, r.Pool, r.Device)
}

// sliceDeviceOf is the allocated device as the driver's slices publish it
// now.
func (w *world) sliceDeviceOf(ctx context.Context, r resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error) {
	list, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + r.Driver})
	if err != nil {
		return nil, fmt.Errorf("list the ResourceSlices of driver %s: %w", r.Driver, err)
	}
	if d := kit.FindSliceDevice(list.Items, r); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("device %s/%s/%s is in no ResourceSlice", r.Driver, r.Pool, r.Device)
}

func (w *world) injectDeclaredFault(ctx context.Context, claim, answer string) (context.Context, error) {
	resp, ok := w.pickResponse(answer)
	if !ok {
		return kit.Skip(ctx, fmt.Sprintf("%sthe driver declares no fault it answers with %s (deviceKinds[].faults, --fault-responses)", report.NotDeclaredPrefix, answer))
	}
	_, result, err := w.claimDevice(ctx, claim)
	if err != nil {
		return ctx, err
	}
	target, err := w.faultTarget(ctx, result)
	if err != nil {
		return ctx, err
	}
	target.Fault = resp.fault
	argv, err := w.Driver.FaultCommand.ExpandInject(target)
	if err != nil {
		return ctx, kit.KitFailure(fmt.Errorf("inject fault %s under device %s/%s of claim %s: %w", resp.fault, result.Pool, result.Device, claim, err))
	}
	// Whatever happens next, the device is reset when the scenario ends,
	// so that the next scenario finds it healthy and untainted.
	w.Releases = append(w.Releases, func() error { return w.resetAndSettle(context.WithoutCancel(ctx), target) })
	// Eviction steps watch the scenario's pods from before the fault.
	pods, err := w.Kube.CoreV1().Pods(w.Ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list the scenario's pods: %w", err)
	}
	w.taint.podsRV = pods.ResourceVersion
	w.fault = &injectedFault{Claim: claim, target: target, result: result, response: resp, at: time.Now()}
	out, err := w.runFaultCommand(ctx, target.Node, argv)
	if err != nil {
		return ctx, fmt.Errorf("inject fault %s under device %s/%s of claim %s: %w", resp.fault, result.Pool, result.Device, claim, err)
	}
	klog.FromContext(ctx).Info("Injected a hardware fault", "fault", resp.fault, "device", result.Device, "identity", target.Identity, "node", target.Node, "claim", claim)
	return kit.AttachText(ctx, "fault", fmt.Sprintf("fault %s under device %s/%s (%s) on node %s; the driver declares health %s, taint %q\n$ %s\n%s",
		resp.fault, result.Pool, result.Device, target.Identity, target.Node, resp.health, resp.taint, commandLine(argv), out)), nil
}

// resetDevice runs the fault command's reset for the device.
func (w *world) resetDevice(ctx context.Context, target declaration.FaultValues) error {
	argv, err := w.Driver.FaultCommand.ExpandReset(target)
	if err != nil {
		return kit.KitFailure(fmt.Errorf("reset device %s (%s): %w", target.Name, target.Identity, err))
	}
	if _, err := w.runFaultCommand(ctx, target.Node, argv); err != nil {
		return fmt.Errorf("reset device %s (%s): %w", target.Name, target.Identity, err)
	}
	return nil
}

// resetAndSettle resets the device and waits until the driver's slices
// show none of its devices (itself, or partitions that name it as their
// parent) tainted.
func (w *world) resetAndSettle(ctx context.Context, target declaration.FaultValues) error {
	if err := w.resetDevice(ctx, target); err != nil {
		return err
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("the driver's devices of %s to lose their taints after its reset", target.Identity), func(ctx context.Context) (bool, string, error) {
		list, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + w.Driver.DriverName})
		if err != nil {
			return false, err.Error(), nil
		}
		var tainted []string
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if len(d.Taints) > 0 && (kit.StringAttr(d.Attributes, w.Driver.UUIDAttribute) == target.Identity || kit.StringAttr(d.Attributes, w.Driver.ParentUUIDAttribute) == target.Identity) {
					tainted = append(tainted, d.Name)
				}
			}
		}
		return len(tainted) == 0, "still tainted: " + strings.Join(tainted, ", "), nil
	})
}

func (w *world) resetFaultedDevice(ctx context.Context, claim string) (context.Context, error) {
	if w.fault == nil || w.fault.Claim != claim {
		return ctx, fmt.Errorf("no fault was injected under the device of claim %s in this scenario", claim)
	}
	if err := w.resetDevice(ctx, w.fault.target); err != nil {
		return ctx, err
	}
	w.fault.at = time.Now() // what follows is timed from the reset
	return ctx, nil
}

// attachSinceFault attaches the time since the scenario's fault (or reset)
// when there is one: the latency of what a step just saw.
func (w *world) attachSinceFault(ctx context.Context, what string) context.Context {
	if w.fault == nil {
		return ctx
	}
	return kit.AttachText(ctx, "latency", fmt.Sprintf("%s %.3fs after fault %s under %s", what, time.Since(w.fault.at).Seconds(), w.fault.response.fault, w.fault.target.Identity))
}

func describeTaints(ts []resourceapi.DeviceTaint) string {
	if len(ts) == 0 {
		return "no taint"
	}
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	return strings.Join(out, ", ")
}

// deviceTaintedAsDeclared waits until the claim's device carries a taint
// with the effect the driver declares for the injected fault.
func (w *world) deviceTaintedAsDeclared(ctx context.Context, seconds int, claim string) (context.Context, error) {
	if w.fault == nil || w.fault.Claim != claim {
		return ctx, fmt.Errorf("no fault was injected under the device of claim %s in this scenario", claim)
	}
	want := resourceapi.DeviceTaintEffect(w.fault.response.taint)
	_, r, err := w.deviceOfClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	var last string
	err = kit.Poll(ctx, time.Duration(seconds)*time.Second, fmt.Sprintf("device %s/%s of claim %s to be tainted %s after fault %s", r.Pool, r.Device, claim, want, w.fault.response.fault), func(ctx context.Context) (bool, string, error) {
		d, err := w.sliceDeviceOf(ctx, r)
		if err != nil {
			return false, err.Error(), nil
		}
		last = describeTaints(d.Taints)
		return slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Effect == want }), last, nil
	})
	ctx = kit.AttachText(ctx, "taints", last)
	if err == nil {
		ctx = w.attachSinceFault(ctx, "taint "+string(want))
	}
	return ctx, err
}

func (w *world) deviceUntainted(ctx context.Context, seconds int, claim string) (context.Context, error) {
	_, r, err := w.deviceOfClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	return ctx, kit.Poll(ctx, time.Duration(seconds)*time.Second, fmt.Sprintf("device %s/%s of claim %s to have no taint", r.Pool, r.Device, claim), func(ctx context.Context) (bool, string, error) {
		d, err := w.sliceDeviceOf(ctx, r)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(d.Taints) == 0, describeTaints(d.Taints), nil
	})
}

// deviceStaysUntainted watches the claim's device for the duration: a taint
// at any time is a finding.
func (w *world) deviceStaysUntainted(ctx context.Context, claim string, seconds int) (context.Context, error) {
	_, r, err := w.deviceOfClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		d, err := w.sliceDeviceOf(ctx, r)
		if err != nil {
			return ctx, err
		}
		if len(d.Taints) > 0 {
			return ctx, fmt.Errorf("device %s/%s of claim %s: expected no taint, got %s", r.Pool, r.Device, claim, describeTaints(d.Taints))
		}
		if time.Now().After(deadline) {
			return ctx, nil
		}
		select {
		case <-ctx.Done():
			return ctx, ctx.Err()
		case <-time.After(kit.PollInterval):
		}
	}
}

// claimPinnedLike creates a claim whose selector admits only the device
// allocated to the other claim (by its identity attribute).
func (w *world) claimPinnedLike(ctx context.Context, name, other string) error {
	id, _, err := w.deviceOfClaim(ctx, other)
	if err != nil {
		return err
	}
	sel := kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, id)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.DeviceClass(), 1, sel)))
}
