package conformance

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// adminAccessSteps are KEP-5018's: the namespace label that permits
// adminAccess requests, and what the API server stored of them. Claims for
// a named device with admin access and their allocation are steps of
// steps_taints.go, which KEP-5055 shares.
func (w *world) adminAccessSteps() []stepDef {
	return []stepDef{
		{`^the scenario's namespace carries the admin-access label with value "([^"]*)"$`, w.namespaceAdminAccessLabel, nil},
		{`^the (ResourceClaim|ResourceClaimTemplate) "([^"]+)" asks for admin access as stored$`, w.storedAdminAccess, nil},
	}
}

// namespaceAdminAccessLabel sets the label to a value; only "true" permits
// admin access (namespaceAllowsAdminAccess).
func (w *world) namespaceAdminAccessLabel(ctx context.Context, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, adminAccessLabel, value)
	if _, err := w.kube.CoreV1().Namespaces().Patch(ctx, w.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s %s=%s: %w", w.ns, adminAccessLabel, value, err)
	}
	return nil
}

// storedAdminAccess checks that every request of the object, as stored,
// asks for admin access.
func (w *world) storedAdminAccess(ctx context.Context, kind, name string) error {
	var spec resourceapi.ResourceClaimSpec
	switch kind {
	case kindClaim:
		c, err := w.kube.ResourceV1().ResourceClaims(w.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get claim %s: %w", name, err)
		}
		spec = c.Spec
	default:
		t, err := w.kube.ResourceV1().ResourceClaimTemplates(w.ns).Get(ctx, name, metav1.GetOptions{})
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
	return findings(bad)
}
