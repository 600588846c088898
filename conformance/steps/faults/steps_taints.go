package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/inventory"
	"drakit.dev/drakit/conformance/kit"
)

// taintSteps are KEP-5055's: DeviceTaintRules the kit creates (the
// administrator's API, so they taint the devices of any driver), claims that
// tolerate taints, and what the scheduler and the API server did with them.
// The rules' steps are in steps_taintrules.go, the eviction steps in
// steps_evictions.go.
func (w *world) taintSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceClaim "([^"]+)" requesting device "([^"]+)"( with admin access)?(?: tolerating "([^"]+)" with operator (\w+)(?: and effect (\w+))?(?: for (-?\d+) seconds)?)?$`, Fn: w.claimForDevice},
		{Pattern: `^the claim "([^"]+)" is (still )?allocated device "([^"]+)"( for admin access)?$`, Fn: w.claimAllocatedDevice},
		{Pattern: `^the claim "([^"]+)" is allocated a device other than "([^"]+)"$`, Fn: w.claimAllocatedOtherDevice},
		{Pattern: `^the allocation of the claim "([^"]+)" holds the tolerations of its request$`, Fn: w.allocationHoldsTolerations},
		{Pattern: `^the claim "([^"]+)" stores its toleration with operator (\w+)$`, Fn: w.claimStoresOperator},
	}
}

// taintState is what a scenario's KEP-5055 steps remember.
type taintState struct {
	// devices are the driver's devices the scenario named, by alias.
	devices map[string]inventory.Device
	// rules are the DeviceTaintRules it created: object name by alias.
	rules map[string]string
	// podsRV is the resource version of the scenario's pods when it last
	// created a rule or broke a device's hardware: eviction steps watch the
	// pods from there, so that an eviction right after the taint is not
	// missed.
	podsRV string
}

// parseToleration builds a toleration from the step's words; seconds is ""
// for none.
func parseToleration(taint, operator, effect, seconds string) (resourceapi.DeviceToleration, error) {
	key, value, _ := strings.Cut(taint, "=")
	t := resourceapi.DeviceToleration{Key: key, Value: value, Operator: resourceapi.DeviceTolerationOperator(operator),
		Effect: resourceapi.DeviceTaintEffect(effect)}
	if seconds != "" {
		s, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil {
			return t, fmt.Errorf("toleration seconds %q: %w", seconds, err)
		}
		t.TolerationSeconds = &s
	}
	return t, nil
}

// claimForDevice creates a claim for exactly the named device (selected by
// its identity), with admin access and a toleration when the step says so.
func (w *world) claimForDevice(ctx context.Context, claim, device, admin, taint, operator, effect, seconds string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	spec := kit.ClaimSpec(w.Driver.DeviceClass(), 1, kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, d.Identity))
	req := spec.Devices.Requests[0].Exactly
	if admin != "" {
		req.AdminAccess = ptr.To(true)
	}
	if taint != "" {
		t, err := parseToleration(taint, operator, effect, seconds)
		if err != nil {
			return fmt.Errorf("claim %s: %w", claim, err)
		}
		req.Tolerations = []resourceapi.DeviceToleration{t}
	}
	return w.CreateClaim(ctx, kit.NewClaim(claim, spec))
}

// allocatedOneDevice waits until the claim is allocated one device of the
// driver (judged by the oracle, claimAllocated) and returns it as stored.
// With judged false it reads the allocation as stored without the oracle:
// for an allocation made before a taint, which the reference checker would
// judge against today's taints.
func (w *world) allocatedOneDevice(ctx context.Context, claim string, judged bool) (*resourceapi.ResourceClaim, resourceapi.DeviceRequestAllocationResult, error) {
	if judged {
		if err := w.ClaimAllocated(ctx, claim, "", 1); err != nil {
			return nil, resourceapi.DeviceRequestAllocationResult{}, err
		}
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return nil, resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := kit.DriverResults(c, w.Driver.DriverName)
	if len(results) != 1 {
		return nil, resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s: expected 1 device of driver %s, got %s", claim, w.Driver.DriverName, kit.ResultIDs(results))
	}
	return c, results[0], nil
}

func (w *world) claimAllocatedDevice(ctx context.Context, claim, still, device, admin string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	_, r, err := w.allocatedOneDevice(ctx, claim, still == "")
	if err != nil {
		return err
	}
	var bad []string
	if r.Pool != d.Pool || r.Device != d.Name {
		bad = append(bad, fmt.Sprintf("claim %s: expected device %s (%q), got %s/%s", claim, d.ID(), device, r.Pool, r.Device))
	}
	if admin != "" && (r.AdminAccess == nil || !*r.AdminAccess) {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation of device %s/%s does not say adminAccess: true", claim, r.Pool, r.Device))
	}
	return kit.Findings(bad)
}

func (w *world) claimAllocatedOtherDevice(ctx context.Context, claim, device string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	_, r, err := w.allocatedOneDevice(ctx, claim, true)
	if err != nil {
		return err
	}
	if r.Pool == d.Pool && r.Device == d.Name {
		return fmt.Errorf("claim %s: expected device %s (%q) to stay unallocated, got it", claim, d.ID(), device)
	}
	return nil
}

// allocationHoldsTolerations checks that every result of the claim holds a
// copy of its request's tolerations as the API server stored them.
func (w *world) allocationHoldsTolerations(ctx context.Context, claim string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated", claim)
	}
	return kit.Findings(checkResultTolerations(c))
}

// checkResultTolerations compares each result's tolerations with those of
// its request in the claim's spec.
func checkResultTolerations(c *resourceapi.ResourceClaim) []string {
	requested := map[string][]resourceapi.DeviceToleration{}
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil {
			requested[r.Name] = r.Exactly.Tolerations
		}
		for _, s := range r.FirstAvailable {
			requested[r.Name+"/"+s.Name] = s.Tolerations
		}
	}
	var bad []string
	for _, r := range c.Status.Allocation.Devices.Results {
		want := requested[r.Request]
		if len(want) == 0 {
			continue
		}
		if !tolerationsEqual(r.Tolerations, want) {
			bad = append(bad, fmt.Sprintf("claim %s: the result for device %s/%s holds tolerations %s, expected the request's %s",
				c.Name, r.Pool, r.Device, describeTolerations(r.Tolerations), describeTolerations(want)))
		}
	}
	if len(bad) == 0 && len(requested) > 0 && len(c.Status.Allocation.Devices.Results) == 0 {
		bad = append(bad, fmt.Sprintf("claim %s: the allocation has no results", c.Name))
	}
	return bad
}

func tolerationsEqual(a, b []resourceapi.DeviceToleration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Key != y.Key || x.Operator != y.Operator || x.Value != y.Value || x.Effect != y.Effect ||
			!ptr.Equal(x.TolerationSeconds, y.TolerationSeconds) {
			return false
		}
	}
	return true
}

func describeTolerations(ts []resourceapi.DeviceToleration) string {
	if len(ts) == 0 {
		return "none"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s := fmt.Sprintf("{key %q, operator %s, value %q, effect %q", t.Key, t.Operator, t.Value, t.Effect)
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(", tolerationSeconds %d", *t.TolerationSeconds)
		}
		parts[i] = s + "}"
	}
	return strings.Join(parts, ", ")
}

func (w *world) claimStoresOperator(ctx context.Context, claim, operator string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	r := c.Spec.Devices.Requests[0]
	if r.Exactly == nil || len(r.Exactly.Tolerations) != 1 {
		return fmt.Errorf("claim %s: expected its request %s to store 1 toleration", claim, r.Name)
	}
	if got := r.Exactly.Tolerations[0].Operator; string(got) != operator {
		return fmt.Errorf("claim %s: its toleration is stored with operator %q, expected %q", claim, got, operator)
	}
	return nil
}

// podCondition returns the pod's condition of type t, nil without one.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
