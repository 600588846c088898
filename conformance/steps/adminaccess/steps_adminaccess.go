package adminaccess

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
)

// adminAccessSteps are KEP-5018's: the namespace label that permits
// adminAccess requests, and what the API server stored of them. The
// devices a scenario names are the kit's (World.HeldDevice); claims for a
// named device with admin access and their allocation are steps of
// package faults, which KEP-5055 shares.
func (w *world) adminAccessSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the scenario's namespace allows admin access$`, Fn: w.namespaceAllowsAdminAccess, Needs: needsDevicesWithoutCounters},
		{Pattern: `^the scenario's namespace carries the admin-access label with value "([^"]*)"$`, Fn: w.namespaceAdminAccessLabel},
		{Pattern: `^the (ResourceClaim|ResourceClaimTemplate) "([^"]+)" asks for admin access as stored$`, Fn: w.storedAdminAccess},
		{Pattern: `^a status update of the claim "([^"]+)" that allocates it device "([^"]+)" for admin access is submitted$`, Fn: w.submitAdminAllocation},
	}
}

// namespaceAdminAccessLabel sets the label to a value; only "true" permits
// admin access (namespaceAllowsAdminAccess).
func (w *world) namespaceAdminAccessLabel(ctx context.Context, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, AdminAccessLabel, value)
	if _, err := w.Kube.CoreV1().Namespaces().Patch(ctx, w.Ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s %s=%s: %w", w.Ns, AdminAccessLabel, value, err)
	}
	return nil
}

// storedAdminAccess checks that every request of the object, as stored,
// asks for admin access.
func (w *world) storedAdminAccess(ctx context.Context, kind, name string) error {
	var spec resourceapi.ResourceClaimSpec
	switch kind {
	case kit.KindClaim:
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get claim %s: %w", name, err)
		}
		spec = c.Spec
	default:
		t, err := w.Kube.ResourceV1().ResourceClaimTemplates(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get ResourceClaimTemplate %s: %w", name, err)
		}
		spec = t.Spec.Spec
	}
	var bad []string
	for _, r := range spec.Devices.Requests {
		if r.Exactly == nil || r.Exactly.AdminAccess == nil || !*r.Exactly.AdminAccess {
			bad = append(bad, fmt.Sprintf("%s %s: request %s is stored without adminAccess: true", kind, name, r.Name))
		}
	}
	return kit.Findings(bad)
}

// submitAdminAllocation writes, as a scheduler would, an allocation of the
// named device with adminAccess: true into the status of the claim (one
// request, not yet allocated), and remembers the API server's answer. The
// API server must refuse it where the namespace does not allow admin
// access; where it accepts it, the claim holds the device until cleanup
// deletes it.
func (w *world) submitAdminAllocation(ctx context.Context, claim, device string) error {
	d, err := w.HeldDevice(device)
	if err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation != nil || len(c.Spec.Devices.Requests) != 1 {
		return fmt.Errorf("claim %s: the step needs a claim with one request that is not allocated", claim)
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: c.Spec.Devices.Requests[0].Name, Driver: w.Driver.DriverName, Pool: d.Pool, Device: d.Name, AdminAccess: ptr.To(true),
		}},
	}}
	_, err = w.Kube.ResourceV1().ResourceClaims(w.Ns).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	w.Submitted = &kit.Submission{Kind: kit.KindClaim, Name: claim + " (status)", Err: err}
	return nil
}

// AdminAccessLabel is the namespace label that permits adminAccess requests
// (resourceapi.DRAAdminNamespaceLabelKey), with the only value that does.
const AdminAccessLabel = "resource.kubernetes.io/admin-access"

// needsDevicesWithoutCounters leases whole devices that consume no
// counters: the admin-access scenarios give an administrator a device
// another claim holds, which v1.37.2 refuses for a device whose counters
// the holder drew (the allocator counts them once per allocation).
func needsDevicesWithoutCounters(n *kit.ScenarioNeeds, _ []string) {
	n.WholeWithoutCounters = true
}

func (w *world) namespaceAllowsAdminAccess(ctx context.Context) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, AdminAccessLabel)
	if _, err := w.Kube.CoreV1().Namespaces().Patch(ctx, w.Ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s %s=true: %w", w.Ns, AdminAccessLabel, err)
	}
	return nil
}
