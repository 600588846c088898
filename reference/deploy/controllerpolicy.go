package deploy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The manifests of the admission policy and binding of every cluster-level
// controller, and the policy's condition that matches the controller's
// service account.
const (
	controllerPolicyFile        = "controller-validatingadmissionpolicy.yaml"
	controllerPolicyBindingFile = "controller-validatingadmissionpolicybinding.yaml"
	controllerAccountCondition  = "controller-service-account"
)

// controllerPolicy renders the admission policy and binding that limit the
// cluster-level controller running as sa to driverName's ResourceSlices
// without a node name. Both are named and labelled after sa, and the policy
// matches only sa's requests.
func controllerPolicy(sa *corev1.ServiceAccount, driverName string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	p, b := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := decode(controllerPolicyFile, p); err != nil {
		return nil, nil, err
	}
	if err := decode(controllerPolicyBindingFile, b); err != nil {
		return nil, nil, err
	}
	if err := renderPolicy(p, driverName); err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", controllerPolicyFile, err)
	}
	matched := false
	for i := range p.Spec.MatchConditions {
		if c := &p.Spec.MatchConditions[i]; c.Name == controllerAccountCondition {
			c.Expression = fmt.Sprintf("request.userInfo.username == %q", serviceaccount.MakeUsername(sa.Namespace, sa.Name))
			matched = true
		}
	}
	if !matched {
		return nil, nil, fmt.Errorf("manifest %s: no matchCondition %s", controllerPolicyFile, controllerAccountCondition)
	}
	p.Name, b.Name, b.Spec.PolicyName = sa.Name, sa.Name, sa.Name
	p.Labels[AppLabel], b.Labels[AppLabel] = sa.Name, sa.Name
	return p, b, nil
}
