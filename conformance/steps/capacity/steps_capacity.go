package capacity

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// capacitySteps are KEP-5075's: claims that share one of the driver's
// shared devices (allowMultipleAllocations), each consuming part of its
// declared shared capacity, judged by what the API server stored against
// the request policy the driver published.
func (w *world) capacitySteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver publishes a shared device$`, Fn: w.driverPublishesShared, Needs: kit.NeedsShared},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the smallest share of the shared device$`, Fn: w.claimSmallestShare},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the largest share of the shared device$`, Fn: w.claimLargestShare},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting more of the shared device than the claim "([^"]+)" leaves$`, Fn: w.claimExceedingShare},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the shared device without an amount$`, Fn: w.claimShareWithoutAmount},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting an amount of the shared device between two valid amounts$`, Fn: w.claimShareBetweenValid},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting more of the shared device than its request policy allows$`, Fn: w.claimShareOverPolicy},
		{Pattern: `^the claim "([^"]+)" consumes what the request policy makes of its amount$`, Fn: w.claimConsumesAsPolicy},
		{Pattern: `^the claims "([^"]+)" and "([^"]+)" share the shared device with distinct share IDs$`, Fn: w.claimsShareDevice},
		{Pattern: `^the devices of the driver's DeviceClass do not allow multiple allocations$`, Fn: w.wholeDevicesNotShared},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the device allocated to the claim "([^"]+)"(?: is made)?$`, Fn: w.claimSameDevice},
	}
}

// sharedTarget is the shared device a scenario's claims share.
type sharedTarget struct {
	device   kit.PublishedDevice
	identity string
	policy   capacityPolicy
}

// capacityAsk is what one of the scenario's claims asked of the shared
// capacity: amount in milli-units, or no amount (given false).
type capacityAsk struct {
	amount int64
	given  bool
}

const sharedSkipReason = report.NotDeclaredPrefix + "the driver declares no shared device kind (deviceKinds[].sharedCapacity of its declaration, or --shared-class)"

// driverPublishesShared picks the leased shared device and reads its
// shared capacity and request policy. A device of the shared class that
// does not allow multiple allocations, or lacks the capacity, is a finding.
func (w *world) driverPublishesShared(ctx context.Context) (context.Context, error) {
	if w.Driver.SharedDeviceClassName == "" {
		return kit.Skip(ctx, sharedSkipReason)
	}
	if w.Lease == nil || len(w.Lease.SharedIdentities()) == 0 {
		return ctx, fmt.Errorf("no device of DeviceClass %s with a %q attribute was leased to the scenario: the driver publishes none (or none the kit can identify)",
			w.Driver.SharedDeviceClassName, w.Driver.SharedIdentityAttribute)
	}
	identity := w.Lease.SharedIdentities()[0]
	devices, err := w.ClassDevices(ctx, w.Driver.SharedDeviceClassName)
	if err != nil {
		return ctx, err
	}
	for _, d := range devices {
		a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.SharedIdentityAttribute)
		if !ok || a.StringValue == nil || *a.StringValue != identity {
			continue
		}
		if !d.MultipleAllocations {
			return ctx, fmt.Errorf("device %s of the shared DeviceClass %s does not set allowMultipleAllocations: no two claims can share it", d.ID(), w.Driver.SharedDeviceClassName)
		}
		key, c, ok := lookupCapacity(d.Capacity, w.Driver.DriverName, w.Driver.SharedCapacity)
		if !ok {
			return ctx, fmt.Errorf("shared device %s publishes no capacity %s (the declared sharedCapacity)", d.ID(), w.sharedCapacityName())
		}
		p, err := newCapacityPolicy(key, c)
		if err != nil {
			return ctx, fmt.Errorf("shared device %s: %w", d.ID(), err)
		}
		w.shared = &sharedTarget{device: d, identity: identity, policy: p}
		return ctx, nil
	}
	return ctx, fmt.Errorf("the leased shared device %s=%s is no longer published", w.Driver.SharedIdentityAttribute, identity)
}

// sharedCapacityName is the shared capacity as a fully qualified name.
func (w *world) sharedCapacityName() string {
	domain, id := observe.SplitAttribute(w.Driver.DriverName, w.Driver.SharedCapacity)
	return domain + "/" + id
}

// lookupCapacity finds a capacity by a bare name (the driver's domain) or
// domain/name, as published either way, and returns its key as published:
// requests must name it so (the allocator matches keys as written).
func lookupCapacity(caps map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, driver, name string) (resourceapi.QualifiedName, resourceapi.DeviceCapacity, bool) {
	domain, id := observe.SplitAttribute(driver, name)
	for k, c := range caps {
		d, i := observe.SplitAttribute(driver, string(k))
		if d == domain && i == id {
			return k, c, true
		}
	}
	return "", resourceapi.DeviceCapacity{}, false
}

func (w *world) sharedTarget() (*sharedTarget, error) {
	if w.shared == nil {
		return nil, errors.New("no shared device was picked (a step \"the driver publishes a shared device\" must come first)")
	}
	return w.shared, nil
}

// claimShare creates a claim for the shared device asking for ask.
func (w *world) claimShare(ctx context.Context, name string, ask capacityAsk) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	spec := kit.ClaimSpec(w.Driver.SharedDeviceClassName, 1, kit.UuidSelector(w.Driver.DriverName, w.Driver.SharedIdentityAttribute, t.identity))
	if ask.given {
		spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			t.policy.Name: quantity(ask.amount),
		}}
	}
	w.asks[name] = ask
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

func (w *world) claimSmallestShare(ctx context.Context, name string) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	amount, consumed := t.policy.smallestShare()
	if 2*consumed > t.policy.value {
		return fmt.Errorf("shared device %s: the smallest request its policy allows consumes %s, two of them exceed its %s: no two claims can share it",
			t.device.ID(), milliString(consumed), t.policy.describe())
	}
	return w.claimShare(ctx, name, capacityAsk{amount: amount, given: true})
}

func (w *world) claimLargestShare(ctx context.Context, name string) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	return w.claimShare(ctx, name, capacityAsk{amount: t.policy.largestShare(), given: true})
}

func (w *world) claimExceedingShare(ctx context.Context, name, other string) (context.Context, error) {
	t, err := w.sharedTarget()
	if err != nil {
		return ctx, err
	}
	ask, ok := w.asks[other]
	if !ok {
		return ctx, fmt.Errorf("the scenario made no claim %q for the shared device", other)
	}
	held, _ := t.policy.consumes(ask.amount, ask.given)
	amount, _, ok := t.policy.exceeding(held)
	if !ok {
		return kit.Skip(ctx, fmt.Sprintf("shared device %s: no amount its request policy allows exceeds what a claim of %s leaves (%s)",
			t.device.ID(), milliString(held), t.policy.describe()))
	}
	return ctx, w.claimShare(ctx, name, capacityAsk{amount: amount, given: true})
}

func (w *world) claimShareWithoutAmount(ctx context.Context, name string) error {
	return w.claimShare(ctx, name, capacityAsk{})
}

func (w *world) claimShareBetweenValid(ctx context.Context, name string) (context.Context, error) {
	t, err := w.sharedTarget()
	if err != nil {
		return ctx, err
	}
	amount, _, ok := t.policy.betweenValid()
	if !ok {
		return kit.Skip(ctx, fmt.Sprintf("shared device %s: its request policy rounds no amount (%s)", t.device.ID(), t.policy.describe()))
	}
	return ctx, w.claimShare(ctx, name, capacityAsk{amount: amount, given: true})
}

func (w *world) claimShareOverPolicy(ctx context.Context, name string) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	return w.claimShare(ctx, name, capacityAsk{amount: t.policy.overPolicy(), given: true})
}

// sharedResult is the claim's allocation result for the shared device.
func (w *world) sharedResult(ctx context.Context, claim string) (resourceapi.DeviceRequestAllocationResult, error) {
	t, err := w.sharedTarget()
	if err != nil {
		return resourceapi.DeviceRequestAllocationResult{}, err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s is not allocated", claim)
	}
	results := kit.DriverResults(c, w.Driver.DriverName)
	if len(results) != 1 || results[0].Pool != t.device.Pool || results[0].Device != t.device.Name {
		return resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s: expected the shared device %s, got %s", claim, t.device.ID(), kit.ResultIDs(results))
	}
	return results[0], nil
}

// claimConsumesAsPolicy: the allocation records a share ID and, for the
// shared capacity, exactly what the spec's rounding makes of the claim's
// request under the published policy.
func (w *world) claimConsumesAsPolicy(ctx context.Context, claim string) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	ask, ok := w.asks[claim]
	if !ok {
		return fmt.Errorf("the scenario made no claim %q for the shared device", claim)
	}
	want, fits := t.policy.consumes(ask.amount, ask.given)
	if !fits {
		return fmt.Errorf("claim %s: the kit expected no device to serve its request (%s)", claim, t.policy.describe())
	}
	r, err := w.sharedResult(ctx, claim)
	if err != nil {
		return err
	}
	var bad []string
	if r.ShareID == nil || *r.ShareID == "" {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation of shared device %s has no shareID", claim, t.device.ID()))
	}
	_, got, ok := lookupCapacity(capacityMap(r.ConsumedCapacity), w.Driver.DriverName, w.Driver.SharedCapacity)
	asked := "no amount"
	if ask.given {
		asked = milliString(ask.amount)
	}
	switch {
	case !ok:
		bad = append(bad, fmt.Sprintf("claim %s: consumedCapacity has no %s (it must list every capacity of the device)", claim, w.sharedCapacityName()))
	case got.Value.MilliValue() != want:
		bad = append(bad, fmt.Sprintf("claim %s: asked for %s of %s, consumes %s; the request policy (%s) makes it %s",
			claim, asked, w.sharedCapacityName(), got.Value.String(), t.policy.describe(), milliString(want)))
	}
	return kit.Findings(bad)
}

// capacityMap views consumedCapacity as capacities, for lookupCapacity.
func capacityMap(m map[resourceapi.QualifiedName]resource.Quantity) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(m))
	for k, v := range m {
		out[k] = resourceapi.DeviceCapacity{Value: v}
	}
	return out
}

// claimsShareDevice: both claims hold the same shared device under
// different share IDs, and what all claims of the device consume is within
// its capacity.
func (w *world) claimsShareDevice(ctx context.Context, a, b string) error {
	t, err := w.sharedTarget()
	if err != nil {
		return err
	}
	ra, err := w.sharedResult(ctx, a)
	if err != nil {
		return err
	}
	rb, err := w.sharedResult(ctx, b)
	if err != nil {
		return err
	}
	var bad []string
	if ra.ShareID == nil || rb.ShareID == nil || *ra.ShareID == *rb.ShareID {
		bad = append(bad, fmt.Sprintf("claims %s and %s share device %s under share IDs %v and %v; each allocation needs its own", a, b, t.device.ID(), deref(ra.ShareID), deref(rb.ShareID)))
	}
	claims, err := w.Kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list ResourceClaims: %w", err)
	}
	total := int64(0)
	for _, c := range claims.Items {
		for _, r := range kit.DriverResults(&c, w.Driver.DriverName) {
			if r.Pool != t.device.Pool || r.Device != t.device.Name {
				continue
			}
			if _, q, ok := lookupCapacity(capacityMap(r.ConsumedCapacity), w.Driver.DriverName, w.Driver.SharedCapacity); ok {
				total += q.Value.MilliValue()
			}
		}
	}
	if total > t.policy.value {
		bad = append(bad, fmt.Sprintf("the claims of shared device %s consume %s of %s together, more than its %s", t.device.ID(), milliString(total), w.sharedCapacityName(), milliString(t.policy.value)))
	}
	return kit.Findings(bad)
}

func deref[T any](p *T) any {
	if p == nil {
		return "none"
	}
	return *p
}

func milliString(v int64) string {
	q := quantity(v)
	return q.String()
}

// wholeDevicesNotShared skips a scenario about exclusive devices when the
// driver's main DeviceClass has devices that allow multiple allocations.
func (w *world) wholeDevicesNotShared(ctx context.Context) (context.Context, error) {
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return ctx, err
	}
	for _, d := range devices {
		if d.MultipleAllocations {
			return kit.Skip(ctx, fmt.Sprintf("device %s of DeviceClass %s allows multiple allocations", d.ID(), w.Driver.DeviceClass()))
		}
	}
	return ctx, nil
}

// claimSameDevice asks for the one device of the kit's DeviceClass that is
// allocated to another claim, by its identity.
func (w *world) claimSameDevice(ctx context.Context, name, other string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, other, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", other, err)
	}
	results := kit.DriverResults(c, w.Driver.DriverName)
	if c.Status.Allocation == nil || len(results) != 1 {
		return fmt.Errorf("claim %s: expected 1 allocated device of driver %s, got %s", other, w.Driver.DriverName, kit.ResultIDs(results))
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return err
	}
	d, ok := kit.FindDevice(devices, results[0].Pool, results[0].Device)
	if !ok {
		return fmt.Errorf("claim %s: its device %s/%s is not published", other, results[0].Pool, results[0].Device)
	}
	a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.UUIDAttribute)
	if !ok || a.StringValue == nil {
		return fmt.Errorf("device %s has no %q attribute to select it by", d.ID(), w.Driver.UUIDAttribute)
	}
	sel := kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, *a.StringValue)
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.DeviceClass(), 1, sel)))
}
