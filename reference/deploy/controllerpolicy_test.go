package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// controllerPolicies are the cluster-level controllers that write
// ResourceSlices without a node name: each one's admission policy and
// binding, its Deployment and its plugin's workload, rendered for a
// driver name.
var controllerPolicies = []struct {
	name   string
	render func(driverName string) (policy *admissionregistrationv1.ValidatingAdmissionPolicy,
		binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding, controller *appsv1.Deployment, plugin workload, err error)
}{
	{"imex", func(driverName string) (*admissionregistrationv1.ValidatingAdmissionPolicy,
		*admissionregistrationv1.ValidatingAdmissionPolicyBinding, *appsv1.Deployment, workload, error) {
		opts := DefaultOptions(KindGPU)
		opts.DriverName, opts.IMEXChannels = driverName, 8
		m, err := Objects(opts)
		if err != nil {
			return nil, nil, nil, workload{}, err
		}
		return m.Controller.Policy, m.Controller.PolicyBinding, m.Controller.Deployment, gpuWorkload, nil
	}},
	{"tpu", func(driverName string) (*admissionregistrationv1.ValidatingAdmissionPolicy,
		*admissionregistrationv1.ValidatingAdmissionPolicyBinding, *appsv1.Deployment, workload, error) {
		opts := DefaultOptions(KindTPU)
		opts.DriverName = driverName
		m, err := Objects(opts)
		if err != nil {
			return nil, nil, nil, workload{}, err
		}
		return m.Controller.Policy, m.Controller.PolicyBinding, m.Controller.Deployment, tpuWorkload, nil
	}},
}

// TestControllerPolicyLimitsToSlicesWithoutNode evaluates each
// controller's rendered policy as the apiserver does: the controller's
// service account (the one its Deployment runs as) may create, update and
// delete its driver's slices without a node name, and no slice of a node
// (the kubelet plugins') nor of another driver; the plugin's service
// account and the admin are not matched.
func TestControllerPolicyLimitsToSlicesWithoutNode(t *testing.T) {
	t.Parallel()
	const driver = "ctl.example.com"
	for _, c := range controllerPolicies {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			policy, binding, controller, plugin, err := c.render(driver)
			if err != nil {
				t.Fatal(err)
			}
			if binding.Spec.PolicyName != policy.Name || binding.Spec.MatchResources != nil || binding.Spec.ParamRef != nil ||
				!cmp.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
				t.Errorf("binding %s: %+v, want policy %s denied, not narrowed", binding.Name, binding.Spec, policy.Name)
			}
			if got := ptr.Deref(policy.Spec.FailurePolicy, ""); got != admissionregistrationv1.Fail {
				t.Errorf("failure policy %s, want Fail", got)
			}
			sa := serviceaccount.MakeUsername(controller.Namespace, controller.Spec.Template.Spec.ServiceAccountName)
			want := []admissionregistrationv1.MatchCondition{{Name: "controller-service-account",
				Expression: fmt.Sprintf("request.userInfo.username == %q", sa)}}
			if diff := cmp.Diff(want, policy.Spec.MatchConditions); diff != "" {
				t.Errorf("match conditions (-want +got):\n%s", diff)
			}
			p := compilePolicy(t, policy)

			ctl := &user.DefaultInfo{Name: sa, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
			admin := &user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
			const nodeSlice = "the controller's service account may not modify ResourceSlices of node node-a"
			otherDriver := "the controller's service account may modify only ResourceSlices of driver " + driver + ", not of other.example.com"
			for _, tc := range []struct {
				name     string
				op       admission.Operation
				obj, old string // the slice's node ("" a node selector), "-" none
				driver   string
				user     user.Info
				want     []string
			}{
				{"create-without-node", admission.Create, "", "-", driver, ctl, nil},
				{"update-without-node", admission.Update, "", "", driver, ctl, nil},
				{"delete-without-node", admission.Delete, "-", "", driver, ctl, nil},
				{"create-node-slice", admission.Create, "node-a", "-", driver, ctl, []string{nodeSlice}},
				{"update-node-slice", admission.Update, "node-a", "node-a", driver, ctl, []string{nodeSlice}},
				{"delete-node-slice", admission.Delete, "-", "node-a", driver, ctl, []string{nodeSlice}},
				{"create-other-driver", admission.Create, "", "-", "other.example.com", ctl, []string{otherDriver}},
				{"delete-other-drivers-node-slice", admission.Delete, "-", "node-a", "other.example.com", ctl, []string{nodeSlice, otherDriver}},
				{"plugin-not-matched", admission.Create, "", "-", driver, serviceAccountOn(plugin, "node-a"), nil},
				{"admin-not-matched", admission.Delete, "-", "node-a", driver, admin, nil},
			} {
				sliceOf := func(node string) *resourceapi.ResourceSlice {
					if node == "-" {
						return nil
					}
					return slice(tc.driver, node)
				}
				if got := p.admit(t, tc.op, sliceOf(tc.obj), sliceOf(tc.old), tc.user); !cmp.Equal(tc.want, got) {
					t.Errorf("%s: denials %q, want %q", tc.name, got, tc.want)
				}
			}
		})
	}
}

// TestDeleteRemovesControllerPolicies: Delete and DeleteTPU remove the
// controllers' admission policies and bindings they applied, and a delete
// pinned to a node leaves them to the other nodes.
func TestDeleteRemovesControllerPolicies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	gone := func(t *testing.T, client kubernetes.Interface, name string, want bool) {
		t.Helper()
		for what, err := range map[string]error{
			"policy":         get(client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})),
			"policy binding": get(client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})),
		} {
			if apierrors.IsNotFound(err) != want {
				t.Errorf("%s %s: get: %v, want it gone: %t", what, name, err, want)
			}
		}
	}
	imex := DefaultOptions(KindGPU)
	imex.IMEXChannels, imex.Timeout = 8, 10*time.Second
	tpu := DefaultOptions(KindTPU)
	tpu.Timeout = 10 * time.Second
	for _, c := range []struct {
		policy  string
		objects func() ([]runtime.Object, error)
		// del deletes the deployment, from node only with a node.
		del func(ctx context.Context, client kubernetes.Interface, node string) error
	}{
		{IMEXName, func() ([]runtime.Object, error) {
			m, err := Objects(imex)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		}, func(ctx context.Context, client kubernetes.Interface, node string) error {
			opts := imex
			opts.Node = node
			return Delete(ctx, client, opts)
		}},
		{TPUControllerName, func() ([]runtime.Object, error) {
			m, err := Objects(tpu)
			if err != nil {
				return nil, err
			}
			return m.List(), nil
		}, func(ctx context.Context, client kubernetes.Interface, node string) error {
			opts := tpu
			opts.Node = node
			return Delete(ctx, client, opts)
		}},
	} {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			objs, err := c.objects()
			if err != nil {
				t.Fatal(err)
			}
			if err := applyObjects(ctx, client, objs); err != nil {
				t.Fatal(err)
			}
			if err := c.del(ctx, client, testNode); err != nil {
				t.Fatalf("delete on node %s: %v", testNode, err)
			}
			gone(t, client, c.policy, false)
			if err := c.del(ctx, client, ""); err != nil {
				t.Fatalf("delete: %v", err)
			}
			gone(t, client, c.policy, true)
		})
	}
}
