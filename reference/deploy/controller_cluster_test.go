package deploy

import (
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// TestIntegrationControllerSliceAdmission checks the deployed admission
// policies of the cluster-level controllers on a real cluster: with the
// token of a running controller pod, the IMEX controller and the TPU
// controller may write their driver's ResourceSlices without a node name
// and no slice of a node (the kubelet plugins') nor of another driver.
// It runs when DRAKIT_KUBECONFIG names the admin kubeconfig of a cluster
// with both deployed (scripts/conformance-fabric.sh). Every write is a dry
// run.
func TestIntegrationControllerSliceAdmission(t *testing.T) {
	adminConfig, admin := clusterAdmin(t, "the GPU driver's IMEX controller and the TPU driver's controller",
		"drakit env up --nodes 4 --cluster-profile conformance-fabric --deploy gpu,tpu --imex-channels 8")
	for _, controller := range []workload{{Namespace, IMEXName, ""}, tpuControllerWorkload} {
		t.Run(controller.name, func(t *testing.T) {
			ctx := t.Context()
			policy, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, controller.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get the controller's admission policy: %v", err)
			}
			if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, controller.name, metav1.GetOptions{}); err != nil {
				t.Fatalf("get the controller's admission policy binding: %v", err)
			}
			driver := ""
			for _, v := range policy.Spec.Variables {
				if v.Name == "driverName" {
					if driver, err = strconv.Unquote(v.Expression); err != nil {
						t.Fatalf("policy variable driverName %q: %v", v.Expression, err)
					}
				}
			}
			sa, _ := podBoundClient(t, admin, adminConfig, controller, "the token is not the one its pod gets")
			nodeSlices, err := admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("spec.driver", driver).String(),
			})
			if err != nil {
				t.Fatalf("list the slices of %s: %v", driver, err)
			}
			var nodeSlice *resourceapi.ResourceSlice
			for i, s := range nodeSlices.Items {
				if s.Spec.NodeName != nil {
					nodeSlice = &nodeSlices.Items[i]
					break
				}
			}
			if nodeSlice == nil {
				t.Fatalf("no slice of %s with a node name: the kubelet plugins publish none", driver)
			}
			newSlice := func(driver, node string) *resourceapi.ResourceSlice {
				return admissionTestSlice(driver, node, *nodeSlice.Spec.NodeName)
			}
			dryCreate := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
			denied := func(what, want string, err error) {
				t.Helper()
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+controller.name+"'") ||
					!strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want it forbidden by ValidatingAdmissionPolicy %s with %q", what, err, controller.name, want)
				}
			}
			_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, ""), dryCreate)
			if err != nil {
				t.Errorf("the controller creating a slice with a node selector: %v, want it allowed", err)
			}
			node := *nodeSlice.Spec.NodeName
			_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, node), dryCreate)
			denied("the controller creating a slice of node "+node, "may not modify ResourceSlices of node "+node, err)
			_, err = sa.ResourceV1().ResourceSlices().Update(ctx, nodeSlice, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			denied("the controller updating the plugin's slice "+nodeSlice.Name, "may not modify ResourceSlices of node "+node, err)
			err = sa.ResourceV1().ResourceSlices().Delete(ctx, nodeSlice.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			denied("the controller deleting the plugin's slice "+nodeSlice.Name, "may not modify ResourceSlices of node "+node, err)
			_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice("other."+driver, ""), dryCreate)
			denied("the controller creating a slice of another driver", "may modify only ResourceSlices of driver "+driver, err)
		})
	}
}
