package attributes

import (
	"context"
	"fmt"
	"regexp"

	"drakit.dev/drakit/conformance/kit"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fractionalSteps check request policy ranges with fractional bounds
// (KEP-5075 with the beta gate DRAFractionalCapacityRange,
// dra-1.37-spec.md §7, behaviours 4 and 5) on shared devices of the test
// driver: the API server compares min, max, step and default in
// milli-units when any of them is fractional, and the scheduler rounds a
// request up to min + n·step in milli-units.
func (w *world) fractionalSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the test driver publishes a pool "([^"]+)" with ` + sharedRangePattern + `$`, Fn: w.publishFractionalPool},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\S+) of the test driver's capacity "([^"]+)"$`, Fn: w.claimTestCapacity},
		{Pattern: `^the claim "([^"]+)" consumes (\S+) of the test driver's capacity "([^"]+)"$`, Fn: w.claimConsumesTestCapacity},
		{Pattern: `^the ResourceSlice "([^"]+)" stores the capacity "([^"]+)" with the validRange min (\S+), step (\S+), max (\S+) and default (\S+)$`, Fn: w.sliceStoresRange},
	}
}

// sharedRangePattern describes a shared device of the test driver; its
// groups are the device, the capacity, its value, and the range's min,
// step, max and default.
const sharedRangePattern = `a shared device "([^"]+)" whose capacity "([^"]+)" of (\S+) has the validRange min (\S+), step (\S+), max (\S+) and default (\S+)`

var sharedRangeRE = regexp.MustCompile(`^` + sharedRangePattern + `$`)

// sharedRangeDevice is a device of the test driver that several claims may
// share, with one capacity and a validRange request policy.
func sharedRangeDevice(name, capacity, value, minimum, step, maximum, def string) (resourceapi.Device, error) {
	var qs [5]resource.Quantity
	for i, s := range []string{value, minimum, step, maximum, def} {
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return resourceapi.Device{}, fmt.Errorf("parse quantity %q of shared device %s: %w", s, name, err)
		}
		qs[i] = q
	}
	return resourceapi.Device{
		Name:                     name,
		AllowMultipleAllocations: ptr.To(true),
		Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{kit.TestRoleAttribute: {StringValue: ptr.To(name)}},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{testAttribute(capacity): {
			Value: qs[0],
			RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default:    &qs[4],
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &qs[1], Step: &qs[2], Max: &qs[3]},
			},
		}},
	}, nil
}

// fractionalSlice builds the slice that submitAttributeSlice submits when
// what describes a shared device with a validRange; ok is false otherwise.
func (w *world) fractionalSlice(name, what string) (*resourceapi.ResourceSlice, bool, error) {
	m := sharedRangeRE.FindStringSubmatch(what)
	if m == nil {
		return nil, false, nil
	}
	d, err := sharedRangeDevice(m[1], m[2], m[3], m[4], m[5], m[6], m[7])
	if err != nil {
		return nil, true, err
	}
	s := w.TestSlice(name, name, 1)
	s.Spec.Devices = []resourceapi.Device{d}
	return s, true, nil
}

func (w *world) publishFractionalPool(ctx context.Context, pool, device, capacity, value, minimum, step, maximum, def string) error {
	d, err := sharedRangeDevice(device, capacity, value, minimum, step, maximum, def)
	if err != nil {
		return err
	}
	return w.PublishTestPool(ctx, pool, 0, d)
}

// claimTestCapacity asks for amount of the capacity of one of the test
// driver's devices.
func (w *world) claimTestCapacity(ctx context.Context, name, amount, capacity string) error {
	q, err := resource.ParseQuantity(amount)
	if err != nil {
		return fmt.Errorf("parse amount %q of claim %s: %w", amount, name, err)
	}
	class, err := w.TestDeviceClass(ctx)
	if err != nil {
		return err
	}
	spec := kit.ClaimSpec(class, 1)
	spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{testAttribute(capacity): q},
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// claimConsumesTestCapacity checks the claim's one result of the test
// driver: it records a share ID and consumes exactly want of the capacity.
func (w *world) claimConsumesTestCapacity(ctx context.Context, claim, want, capacity string) error {
	q, err := resource.ParseQuantity(want)
	if err != nil {
		return fmt.Errorf("parse amount %q: %w", want, err)
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := kit.DriverResults(c, kit.TestDriverName)
	if len(results) != 1 {
		return fmt.Errorf("claim %s is allocated %s of the test driver, expected one shared device", claim, kit.ResultIDs(results))
	}
	r := results[0]
	got, ok := r.ConsumedCapacity[testAttribute(capacity)]
	switch {
	case r.ShareID == nil:
		return fmt.Errorf("claim %s: the result for device %s records no shareID", claim, r.Device)
	case !ok:
		return fmt.Errorf("claim %s: the result for device %s records no consumedCapacity %s (it records %v)", claim, r.Device, testAttribute(capacity), r.ConsumedCapacity)
	case got.Cmp(q) != 0:
		return fmt.Errorf("claim %s consumes %s of %s on device %s, expected %s", claim, got.String(), testAttribute(capacity), r.Device, q.String())
	}
	return nil
}

// sliceStoresRange checks that the API server stored the validRange and
// default of the capacity of the slice's device as given, in value
// (milli-units included: a whole-number rounding would show).
func (w *world) sliceStoresRange(ctx context.Context, name, capacity, minimum, step, maximum, def string) error {
	s, err := w.Kube.ResourceV1().ResourceSlices().Get(ctx, w.TestObjectName(name), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ResourceSlice %s: %w", w.TestObjectName(name), err)
	}
	if len(s.Spec.Devices) != 1 {
		return fmt.Errorf("ResourceSlice %s stores %d devices, expected 1", s.Name, len(s.Spec.Devices))
	}
	c, ok := s.Spec.Devices[0].Capacity[testAttribute(capacity)]
	if !ok || c.RequestPolicy == nil || c.RequestPolicy.ValidRange == nil {
		return fmt.Errorf("ResourceSlice %s stores no validRange for capacity %s", s.Name, testAttribute(capacity))
	}
	p := c.RequestPolicy
	var bad []string
	for _, f := range []struct {
		field, want string
		got         *resource.Quantity
	}{{"min", minimum, p.ValidRange.Min}, {"step", step, p.ValidRange.Step}, {"max", maximum, p.ValidRange.Max}, {"default", def, p.Default}} {
		want, err := resource.ParseQuantity(f.want)
		if err != nil {
			return fmt.Errorf("parse %s %q: %w", f.field, f.want, err)
		}
		switch {
		case f.got == nil:
			bad = append(bad, fmt.Sprintf("ResourceSlice %s: capacity %s stores no %s, expected %s", s.Name, capacity, f.field, want.String()))
		case f.got.Cmp(want) != 0:
			bad = append(bad, fmt.Sprintf("ResourceSlice %s: capacity %s stores %s %s, expected %s", s.Name, capacity, f.field, f.got.String(), want.String()))
		}
	}
	return kit.Findings(bad)
}
