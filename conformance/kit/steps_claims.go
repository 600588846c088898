package kit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"drakit.dev/drakit/conformance/observe"
)

// claimSteps create ResourceClaims and templates and check what the API
// server and the scheduler did with them.
func (w *World) claimSteps() []StepDef {
	return []StepDef{
		{Pattern: `^a ResourceClaimTemplate "([^"]+)" requesting (\d+) devices?$`, Fn: w.templateRequesting, Needs: NeedsWhole(false, 1)},
		{Pattern: `^a ResourceClaimTemplate "([^"]+)" requesting 1 device pinned by its identity attribute$`, Fn: w.templatePinned, Needs: NeedsOneWhole},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) devices?$`, Fn: w.claimRequesting, Needs: NeedsWhole(false, 1)},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) devices with the same "([^"]+)"$`, Fn: w.claimRequestingMatching, Needs: NeedsWhole(false, 1)},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 more device than any node publishes$`, Fn: w.claimTooMany},
		{Pattern: `^a ResourceClaim "([^"]+)" is submitted with (.+)$`, Fn: w.submitClaim},
		{Pattern: `^a ResourceClaimTemplate "([^"]+)" is submitted with (.+)$`, Fn: w.submitClaimTemplate},
		{Pattern: `^the API server rejects it as Invalid with cause (\w+) at "([^"]+)"$`, Fn: w.rejectedAsInvalid},
		{Pattern: `^the API server rejects it as Invalid with cause (\w+) at "([^"]+)" saying "([^"]+)"$`, Fn: w.rejectedAsInvalidSaying},
		{Pattern: `^the API server accepts it$`, Fn: w.submissionAccepted},
		{Pattern: `^the claim "([^"]+)" stores request "([^"]+)" with allocationMode (\w+) and count (-?\d+)$`, Fn: w.claimStoresRequest},
		{Pattern: `^the claim "([^"]+)"(?: of pod "([^"]+)")? is allocated (\d+) devices?$`, Fn: w.ClaimAllocated},
		{Pattern: `^the claim "([^"]+)" is not allocated$`, Fn: w.claimNotAllocated},
		{Pattern: `^the claim "([^"]+)" is reserved for exactly pods "([^"]+)" and "([^"]+)"$`, Fn: func(ctx context.Context, claim, podA, podB string) error {
			return w.ClaimReservedFor(ctx, claim, []string{podA, podB})
		}},
		{Pattern: `^the claim "([^"]+)" is deallocated and reserved for no pod$`, Fn: w.claimDeallocated},
		{Pattern: `^the claim "([^"]+)" of pod "([^"]+)" is deleted$`, Fn: w.generatedClaimDeleted},
		{Pattern: `^the devices allocated to the claim "([^"]+)" have the same "([^"]+)"$`, Fn: w.allocatedShareAttribute},
	}
}

// createClaim creates a claim of the scenario, restricted to the devices the
// scenario leased (leaseSelectors).
func (w *World) CreateClaim(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	w.leaseSelectors(&claim.Spec)
	_, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ResourceClaim %s: %w", claim.Name, err)
	}
	w.Ledger.Add(KindClaim, claim.Name)
	return nil
}

// createClaimTemplate creates a template of the scenario, restricted to the
// devices the scenario leased (leaseSelectors).
func (w *World) createClaimTemplate(ctx context.Context, tmpl *resourceapi.ResourceClaimTemplate) error {
	w.leaseSelectors(&tmpl.Spec.Spec)
	_, err := w.Kube.ResourceV1().ResourceClaimTemplates(w.Ns).Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ResourceClaimTemplate %s: %w", tmpl.Name, err)
	}
	w.Ledger.Add(kindClaimTemplate, tmpl.Name)
	return nil
}

func (w *World) templateRequesting(ctx context.Context, name string, n int) error {
	return w.createClaimTemplate(ctx, newClaimTemplate(name, ClaimSpec(w.Driver.DeviceClass(), int64(n))))
}

// templatePinned selects the first device of the kit's DeviceClass, among
// those the scenario leased, that has an identity, by a CEL selector on its
// identity attribute, so that only this device is eligible.
func (w *World) templatePinned(ctx context.Context, name string) error {
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return err
	}
	leased := map[string]bool{}
	for _, u := range w.LeasedUnits(ctx) {
		for _, id := range u.Parents() {
			leased[id] = true
		}
	}
	for _, d := range devices {
		a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.UUIDAttribute)
		if !ok || a.StringValue == nil || *a.StringValue == "" || !leased[*a.StringValue] {
			continue
		}
		sel := UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, *a.StringValue)
		return w.createClaimTemplate(ctx, newClaimTemplate(name, ClaimSpec(w.Driver.DeviceClass(), 1, sel)))
	}
	return fmt.Errorf("none of the %d devices of driver %s that the scenario may use has a string attribute %q (the kit's identity attribute)", len(devices), w.Driver.DriverName, w.Driver.UUIDAttribute)
}

func (w *World) claimRequesting(ctx context.Context, name string, n int) error {
	return w.CreateClaim(ctx, NewClaim(name, ClaimSpec(w.Driver.DeviceClass(), int64(n))))
}

func (w *World) claimRequestingMatching(ctx context.Context, name string, n int, attr string) error {
	domain, id := observe.SplitAttribute(w.Driver.DriverName, attr)
	spec := WithMatchAttribute(ClaimSpec(w.Driver.DeviceClass(), int64(n)), domain+"/"+id)
	return w.CreateClaim(ctx, NewClaim(name, spec))
}

// claimTooMany asks for one device more than the kit's DeviceClass selects
// on the best-equipped node.
// A node with AllocationResultsMaxSize devices or more cannot be asked for
// more: a claim holds at most that many (the scheduler then fails the pod
// with an error, not as unschedulable), so the scenario skips.
func (w *World) claimTooMany(ctx context.Context, name string) (context.Context, error) {
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return ctx, err
	}
	n := MaxDevicesOnOneNode(devices) + 1
	if n > resourceapi.AllocationResultsMaxSize {
		return Skip(ctx, fmt.Sprintf("a node publishes %d devices of DeviceClass %s: a claim can hold at most %d (AllocationResultsMaxSize), so none can ask for more than a node has",
			n-1, w.Driver.DeviceClass(), resourceapi.AllocationResultsMaxSize))
	}
	return ctx, w.CreateClaim(ctx, NewClaim(name, ClaimSpec(w.Driver.DeviceClass(), int64(n))))
}

// submitClaim tries to create a claim and remembers the outcome for the
// steps that judge it.
func (w *World) submitClaim(ctx context.Context, name, defect string) error {
	claim, err := DefectClaim(name, defect, w.Driver.DeviceClass())
	if err != nil {
		return err
	}
	_, err = w.Kube.ResourceV1().ResourceClaims(w.Ns).Create(ctx, claim, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(KindClaim, name)
	}
	w.Submitted = &Submission{Kind: KindClaim, Name: name, Err: err}
	return nil
}

// submitClaimTemplate tries to create a template for a claim a validation
// scenario names, and remembers the outcome as submitClaim does.
func (w *World) submitClaimTemplate(ctx context.Context, name, defect string) error {
	claim, err := DefectClaim(name, defect, w.Driver.DeviceClass())
	if err != nil {
		return err
	}
	_, err = w.Kube.ResourceV1().ResourceClaimTemplates(w.Ns).Create(ctx, newClaimTemplate(name, claim.Spec), metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kindClaimTemplate, name)
	}
	w.Submitted = &Submission{Kind: kindClaimTemplate, Name: name, Err: err}
	return nil
}

func (w *World) LastSubmission() (*Submission, error) {
	if w.Submitted == nil {
		return nil, errors.New("nothing was submitted (a step \"a ResourceClaim ... is submitted with ...\" or \"a ResourceSlice ... is submitted\" must come first)")
	}
	return w.Submitted, nil
}

func (w *World) rejectedAsInvalid(cause, field string) error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	return checkInvalid(s.Label(), s.Err, cause, field, "")
}

// rejectedAsInvalidSaying is rejectedAsInvalid whose cause's message must
// contain text as well.
func (w *World) rejectedAsInvalidSaying(cause, field, text string) error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	return checkInvalid(s.Label(), s.Err, cause, field, text)
}

// causeType accepts a cause type with or without its FieldValue prefix.
func causeType(cause string) metav1.CauseType {
	if strings.HasPrefix(cause, "FieldValue") {
		return metav1.CauseType(cause)
	}
	return metav1.CauseType("FieldValue" + cause)
}

// checkInvalid checks that err, the answer to creating the object called
// what ("ResourceClaim bad"), is a 422 Invalid whose details list a cause of
// the given type at exactly field, with a message that contains text
// (anything for "").
func checkInvalid(what string, err error, cause, field, text string) error {
	want := causeType(cause)
	if err == nil {
		return fmt.Errorf("the API server accepted %s; expected 422 Invalid with a %s cause at %s", what, want, field)
	}
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("%s was rejected, but not as Invalid (reason %s): %v", what, apierrors.ReasonForError(err), err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return fmt.Errorf("%s was rejected as Invalid without details.causes: %v", what, err)
	}
	causes := status.Status().Details.Causes
	var seen []string
	for _, c := range causes {
		if c.Type == want && c.Field == field && strings.Contains(c.Message, text) {
			return nil
		}
		seen = append(seen, fmt.Sprintf("%s at %s (%s)", c.Type, c.Field, c.Message))
	}
	if text != "" {
		return fmt.Errorf("%s was rejected as Invalid, but no cause is %s at %s saying %q; causes: %s", what, want, field, text, strings.Join(seen, "; "))
	}
	return fmt.Errorf("%s was rejected as Invalid, but no cause is %s at %s; causes: %s", what, want, field, strings.Join(seen, "; "))
}

func (w *World) submissionAccepted() error {
	s, err := w.LastSubmission()
	if err != nil {
		return err
	}
	if s.Err != nil {
		return fmt.Errorf("the API server rejected %s: %v", s.Label(), s.Err)
	}
	return nil
}

func (w *World) claimStoresRequest(ctx context.Context, claim, request, mode string, count int) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	for _, r := range c.Spec.Devices.Requests {
		if r.Name != request {
			continue
		}
		if r.Exactly == nil {
			return fmt.Errorf("claim %s: request %s has no exactly field as stored", claim, request)
		}
		var bad []string
		if string(r.Exactly.AllocationMode) != mode {
			bad = append(bad, fmt.Sprintf("claim %s: request %s is stored with allocationMode %q, expected %q", claim, request, r.Exactly.AllocationMode, mode))
		}
		if r.Exactly.Count != int64(count) {
			bad = append(bad, fmt.Sprintf("claim %s: request %s is stored with count %d, expected %d", claim, request, r.Exactly.Count, count))
		}
		return Findings(bad)
	}
	return fmt.Errorf("claim %s has no request %s as stored", claim, request)
}

// claimRef resolves "the claim X" (a ResourceClaim named X) or "the claim X
// of pod P" (the claim behind P's claim entry X, generated from a template)
// to the object. Once a pod ran, its claims are remembered, so they can be
// named after the pod is gone.
func (w *World) ClaimRef(ctx context.Context, claim, pod string) (ClaimRecord, string, error) {
	if pod == "" {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return ClaimRecord{}, "", fmt.Errorf("get claim %s: %w", claim, err)
		}
		return ClaimRecord{Name: c.Name, UID: c.UID}, "claim " + claim, nil
	}
	p, err := w.Pod(pod)
	if err != nil {
		return ClaimRecord{}, "", err
	}
	label := fmt.Sprintf("claim %s of pod %s", claim, pod)
	if rec, ok := p.Claims[claim]; ok {
		return rec, fmt.Sprintf("%s (%s)", label, rec.Name), nil
	}
	name, err := w.PodClaimName(ctx, pod, claim)
	if err != nil {
		return ClaimRecord{}, "", err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ClaimRecord{}, "", fmt.Errorf("get %s (%s): %w", label, name, err)
	}
	return ClaimRecord{Name: c.Name, UID: c.UID}, fmt.Sprintf("%s (%s)", label, name), nil
}

// driverResults are the allocation results of the driver under test.
func DriverResults(c *resourceapi.ResourceClaim, driver string) []resourceapi.DeviceRequestAllocationResult {
	if c.Status.Allocation == nil {
		return nil
	}
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == driver {
			out = append(out, r)
		}
	}
	return out
}

func ResultIDs(results []resourceapi.DeviceRequestAllocationResult) string {
	if len(results) == 0 {
		return "none"
	}
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.Pool + "/" + r.Device
	}
	return strings.Join(ids, ", ")
}

func (w *World) ClaimAllocated(ctx context.Context, claim, pod string, n int) error {
	ref, label, err := w.ClaimRef(ctx, claim, pod)
	if err != nil {
		return err
	}
	return w.CheckClaimAllocated(ctx, ref, label, n)
}

// checkClaimAllocated waits until the claim is allocated and checks that it
// got n devices of the driver, that they are published, and the allocation
// (checkAllocation).
func (w *World) CheckClaimAllocated(ctx context.Context, ref ClaimRecord, label string, n int) error {
	var c *resourceapi.ResourceClaim
	err := Poll(ctx, w.Cfg.Timeouts.PodStart, label+" to be allocated", func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		c = got
		return got.Status.Allocation != nil, "not allocated", nil
	})
	if err != nil {
		return err
	}
	results := DriverResults(c, w.Driver.DriverName)
	if len(results) != n {
		return fmt.Errorf("%s: expected %d devices of driver %s, got %d: %s", label, n, w.Driver.DriverName, len(results), ResultIDs(results))
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range results {
		if _, ok := FindDevice(devices, r.Pool, r.Device); !ok {
			bad = append(bad, fmt.Sprintf("%s: allocated device %s/%s is not in any ResourceSlice of driver %s", label, r.Pool, r.Device, w.Driver.DriverName))
		}
	}
	if len(bad) > 0 {
		return Findings(bad)
	}
	node, err := w.AllocationNode(ctx, c)
	if err != nil {
		return err
	}
	return w.checkAllocation(ctx, ref.Name, node)
}

func (w *World) claimNotAllocated(ctx context.Context, claim string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation != nil {
		return fmt.Errorf("claim %s is allocated (devices %s), expected no allocation", claim, ResultIDs(c.Status.Allocation.Devices.Results))
	}
	return nil
}

// ClaimReservedFor checks that the API server stored the claim reserved
// for exactly the scenario's pods named.
func (w *World) ClaimReservedFor(ctx context.Context, claim string, pods []string) error {
	want := map[types.UID]string{}
	for _, name := range pods {
		p, err := w.Pod(name)
		if err != nil {
			return err
		}
		want[p.UID] = name
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	return Findings(CheckReservedFor(claim, c.Status.ReservedFor, want))
}

// checkReservedFor compares status.reservedFor with the pods (by UID) that
// should be in it, and only them.
func CheckReservedFor(claim string, got []resourceapi.ResourceClaimConsumerReference, want map[types.UID]string) []string {
	var out []string
	seen := map[types.UID]bool{}
	for _, r := range got {
		name, ok := want[r.UID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("claim %s is reserved for %s %s (uid %s), which is not one of the expected pods", claim, r.Resource, r.Name, r.UID))
		case r.Resource != "pods" || r.APIGroup != "" || r.Name != name:
			out = append(out, fmt.Sprintf("claim %s: reservedFor entry for uid %s is {apiGroup %q, resource %q, name %q}, expected the core pod %s", claim, r.UID, r.APIGroup, r.Resource, r.Name, name))
		}
		seen[r.UID] = true
	}
	for uid, name := range want {
		if !seen[uid] {
			out = append(out, fmt.Sprintf("claim %s is not reserved for pod %s (uid %s)", claim, name, uid))
		}
	}
	return SortedCopy(out)
}

func (w *World) claimDeallocated(ctx context.Context, claim string) error {
	return Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("claim %s to be deallocated and reserved for no pod", claim), func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		allocated := "not allocated"
		if c.Status.Allocation != nil {
			allocated = "allocated " + ResultIDs(c.Status.Allocation.Devices.Results)
		}
		return c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0,
			fmt.Sprintf("%s, reserved for %d consumers", allocated, len(c.Status.ReservedFor)), nil
	})
}

func (w *World) generatedClaimDeleted(ctx context.Context, claim, pod string) error {
	ref, label, err := w.ClaimRef(ctx, claim, pod)
	if err != nil {
		return err
	}
	return Poll(ctx, w.Cfg.Timeouts.Cleanup, label+" to be deleted by the resourceclaim controller", func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		if c.UID != ref.UID {
			return true, "", nil // a new claim with the same name
		}
		return false, fmt.Sprintf("still there (allocated %t, reserved for %d, finalizers %v, deleting %t)",
			c.Status.Allocation != nil, len(c.Status.ReservedFor), c.Finalizers, c.DeletionTimestamp != nil), nil
	})
}

func (w *World) allocatedShareAttribute(ctx context.Context, claim, attr string) error {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := DriverResults(c, w.Driver.DriverName)
	if len(results) == 0 {
		return fmt.Errorf("claim %s has no devices of driver %s allocated", claim, w.Driver.DriverName)
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return err
	}
	return Findings(checkSameAttribute(claim, attr, w.Driver.DriverName, results, devices))
}

// checkSameAttribute checks that all allocated devices have one value of
// attr according to their ResourceSlices.
func checkSameAttribute(claim, attr, driver string, results []resourceapi.DeviceRequestAllocationResult, devices []PublishedDevice) []string {
	var out []string
	values := map[string][]string{}
	for _, r := range results {
		d, ok := FindDevice(devices, r.Pool, r.Device)
		if !ok {
			out = append(out, fmt.Sprintf("claim %s: allocated device %s/%s is not in any ResourceSlice of driver %s", claim, r.Pool, r.Device, driver))
			continue
		}
		a, ok := observe.LookupAttribute(d.Attributes, driver, attr)
		if !ok {
			out = append(out, fmt.Sprintf("claim %s: allocated device %s has no attribute %s", claim, d.ID(), attr))
			continue
		}
		v := observe.AttributeString(a)
		values[v] = append(values[v], d.ID())
	}
	if len(values) > 1 {
		var parts []string
		for v, ids := range values {
			parts = append(parts, fmt.Sprintf("%s=%s on %s", attr, v, strings.Join(ids, ", ")))
		}
		out = append(out, fmt.Sprintf("claim %s: the allocated devices have different values of %s despite the matchAttribute constraint: %s", claim, attr, strings.Join(SortedCopy(parts), "; ")))
	}
	return out
}

// AllocatedClaim returns the claim once allocated with a device of the
// driver.
func (w *World) AllocatedClaim(ctx context.Context, claim string) (*resourceapi.ResourceClaim, []resourceapi.DeviceRequestAllocationResult, error) {
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("get claim %s: %w", claim, err)
	}
	results := DriverResults(c, w.Driver.DriverName)
	if c.Status.Allocation == nil || len(results) == 0 {
		return nil, nil, fmt.Errorf("claim %s has no allocated device of driver %s", claim, w.Driver.DriverName)
	}
	return c, results, nil
}

// AllocatedResults waits for the claim's allocation and returns the
// driver's results joined with their published devices.
func (w *World) AllocatedResults(ctx context.Context, claim string) ([]resourceapi.DeviceRequestAllocationResult, []PublishedDevice, error) {
	var c *resourceapi.ResourceClaim
	err := Poll(ctx, w.Cfg.Timeouts.PodStart, "claim "+claim+" to be allocated", func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		c = got
		return got.Status.Allocation != nil, "not allocated", nil
	})
	if err != nil {
		return nil, nil, err
	}
	results := DriverResults(c, w.Driver.DriverName)
	if len(results) == 0 {
		return nil, nil, fmt.Errorf("claim %s is allocated no device of driver %s", claim, w.Driver.DriverName)
	}
	all, err := w.CurrentDevices(ctx)
	if err != nil {
		return nil, nil, err
	}
	devices := make([]PublishedDevice, 0, len(results))
	for _, r := range results {
		d, ok := FindDevice(all, r.Pool, r.Device)
		if !ok {
			return nil, nil, fmt.Errorf("claim %s: allocated device %s/%s is in no ResourceSlice of driver %s", claim, r.Pool, r.Device, w.Driver.DriverName)
		}
		devices = append(devices, d)
	}
	return results, devices, nil
}
