package binding

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
)

// The steps of KEP-5007 on the driver's own devices (bindingSteps): the
// driver declares the binding conditions every device of it publishes
// (Config.BindingConditions) and, with setBy "kit", leaves them to an
// attach controller outside it, which the kit's attach controller
// (attach.go) stands in for.

// driverDevicesCarryBindingConditions checks what the API server stored:
// every device of the driver's ResourceSlices lists exactly the declared
// bindingConditions and bindingFailureConditions.
func (w *world) driverDevicesCarryBindingConditions(ctx context.Context) error {
	if err := w.requireBindingConditions(); err != nil {
		return err
	}
	sl, err := kit.ListDriverSlices(ctx, w.Kube, w.Driver.DriverName)
	if err != nil {
		return err
	}
	var bad []string
	n := 0
	for _, s := range sl {
		for _, d := range s.Spec.Devices {
			n++
			if !slices.Equal(d.BindingConditions, w.Driver.BindingConditions) || !slices.Equal(d.BindingFailureConditions, w.Driver.BindingFailureConditions) {
				bad = append(bad, fmt.Sprintf("device %s/%s (slice %s) has bindingConditions %q and bindingFailureConditions %q, declared %q and %q",
					s.Spec.Pool.Name, d.Name, s.Name, d.BindingConditions, d.BindingFailureConditions, w.Driver.BindingConditions, w.Driver.BindingFailureConditions))
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("driver %s publishes no devices in %d ResourceSlices", w.Driver.DriverName, len(sl))
	}
	return kit.Findings(bad)
}

// requireBindingConditions fails a scenario of a claimed capability whose
// condition types the kit does not know (Config.Validate rules it out).
func (w *world) requireBindingConditions() error {
	if len(w.Driver.BindingConditions) == 0 || len(w.Driver.BindingFailureConditions) == 0 {
		return fmt.Errorf("the driver claims the capability %s but declares no binding conditions (bindingConditions of the driver declaration)", declaration.CapabilityBindingConditions)
	}
	return nil
}

// kitAttachesDriverDevices lets the scenario go on when the kit's attach
// controller is to set the driver's binding conditions (setBy "kit"); a
// driver that sets them itself decides the outcome alone, and the
// scenario skips.
func (w *world) kitAttachesDriverDevices(ctx context.Context) (context.Context, error) {
	if err := w.requireBindingConditions(); err != nil {
		return ctx, err
	}
	if w.Driver.BindingConditionsSetBy != string(declaration.SetByKit) {
		return kit.Skip(ctx, fmt.Sprintf("the driver sets its binding conditions itself (bindingConditions.setBy: %s): the kit's attach controller has no say", w.Driver.BindingConditionsSetBy))
	}
	return ctx, nil
}

// claimAllocatedDriverBinding waits for the claim to be allocated and
// checks that every result of the driver carries copies of the declared
// lists and the allocation its timestamp.
func (w *world) claimAllocatedDriverBinding(ctx context.Context, claim string) error {
	if err := w.waitAllocated(ctx, claim); err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s lost its allocation before the kit read it", claim)
	}
	var bad []string
	n := 0
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != w.Driver.DriverName {
			continue
		}
		n++
		if !slices.Equal(r.BindingConditions, w.Driver.BindingConditions) || !slices.Equal(r.BindingFailureConditions, w.Driver.BindingFailureConditions) {
			bad = append(bad, fmt.Sprintf("claim %s: the result for device %s/%s has bindingConditions %q and bindingFailureConditions %q, declared %q and %q",
				claim, r.Pool, r.Device, r.BindingConditions, r.BindingFailureConditions, w.Driver.BindingConditions, w.Driver.BindingFailureConditions))
		}
	}
	if n == 0 {
		bad = append(bad, fmt.Sprintf("claim %s: no device of driver %s is allocated (results %s)", claim, w.Driver.DriverName, kit.ResultIDs(c.Status.Allocation.Devices.Results)))
	}
	if c.Status.Allocation.AllocationTimestamp == nil {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation has no allocationTimestamp", claim))
	}
	return kit.Findings(bad)
}

// attachSetsDeclaredConditions sets every declared binding condition of
// the claim's devices to the status, one write each, in the declared
// order.
func (w *world) attachSetsDeclaredConditions(ctx context.Context, claim, status string) error {
	if err := w.requireBindingConditions(); err != nil {
		return err
	}
	for _, c := range w.Driver.BindingConditions {
		if err := w.attachSetsCondition(ctx, c, claim, status); err != nil {
			return err
		}
	}
	return nil
}

// attachSetsDeclaredFailure sets the first declared binding failure
// condition of the claim's devices to True.
func (w *world) attachSetsDeclaredFailure(ctx context.Context, claim string) error {
	if err := w.requireBindingConditions(); err != nil {
		return err
	}
	return w.attachSetsCondition(ctx, w.Driver.BindingFailureConditions[0], claim, string(metav1.ConditionTrue))
}
