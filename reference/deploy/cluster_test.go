package deploy

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// TestIntegrationDriverSliceAdmission checks the deployed admission policy
// on a real cluster: with the token its pod gets (bound to a driver pod),
// the driver's service account may write the ResourceSlices of its driver
// on its own node and no others, while the admin (as drakit driver
// simulate) is not limited. It runs when DRAKIT_KUBECONFIG names the admin
// kubeconfig of a cluster with the driver deployed (drakit driver deploy;
// `eval "$(drakit env status -o env)"` sets it for the local cluster).
// Every write is a dry run except one slice of a node that does not exist,
// created and removed by the admin.
func TestIntegrationDriverSliceAdmission(t *testing.T) {
	adminConfig, admin := clusterAdmin(t, "the driver", "make cluster-up, drakit emulator render, drakit driver deploy")
	ctx := t.Context()

	policy, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the driver's admission policy: %v", err)
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get the driver's admission policy binding: %v", err)
	}
	driver := ""
	for _, v := range policy.Spec.Variables {
		if v.Name == "driverName" {
			driver, err = strconv.Unquote(v.Expression)
			if err != nil {
				t.Fatalf("policy variable driverName %q: %v", v.Expression, err)
			}
		}
	}
	sa, pod := podBoundClient(t, admin, adminConfig, gpuWorkload, "the policy refuses the driver everything")
	node := pod.Spec.NodeName
	const otherNode = "drakit-admission-test-no-such-node"

	newSlice := func(driver, node string) *resourceapi.ResourceSlice {
		return admissionTestSlice(driver, node, otherNode)
	}
	dryCreate := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	dryUpdate := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	dryDelete := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want it allowed", what, err)
		}
	}
	denied := func(what, want string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+Name+"'") ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it forbidden by ValidatingAdmissionPolicy %s with %q", what, err, Name, want)
		}
	}

	_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, node), dryCreate)
	allowed("the driver creating a slice of its node", err)
	_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, otherNode), dryCreate)
	denied("the driver creating a slice of another node", "may not modify ResourceSlices of node "+otherNode, err)
	_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, ""), dryCreate)
	denied("the driver creating a slice with a node selector", "may not modify ResourceSlices without a node name", err)
	_, err = sa.ResourceV1().ResourceSlices().Create(ctx, newSlice("other."+driver, node), dryCreate)
	denied("the driver creating a slice of another driver", "may modify only ResourceSlices of driver "+driver, err)
	_, err = admin.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, ""), dryCreate)
	allowed("the admin creating a slice with a node selector, as drakit driver simulate does", err)

	own, err := admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("spec.driver", driver),
			fields.OneTermEqualSelector("spec.nodeName", node)).String(),
	})
	if err != nil || len(own.Items) == 0 {
		t.Fatalf("list the slices of %s on node %s: %d slices, error %v", driver, node, len(own.Items), err)
	}
	_, err = sa.ResourceV1().ResourceSlices().Update(ctx, &own.Items[0], dryUpdate)
	allowed("the driver updating a slice of its node", err)
	allowed("the driver deleting a slice of its node", sa.ResourceV1().ResourceSlices().Delete(ctx, own.Items[0].Name, dryDelete))

	other, err := admin.ResourceV1().ResourceSlices().Create(ctx, newSlice(driver, otherNode), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a slice of node %s as the admin: %v", otherNode, err)
	}
	t.Cleanup(func() {
		if err := admin.ResourceV1().ResourceSlices().Delete(context.WithoutCancel(ctx), other.Name, metav1.DeleteOptions{}); err != nil &&
			!apierrors.IsNotFound(err) {
			t.Errorf("delete the test slice %s: %v", other.Name, err)
		}
	})
	_, err = sa.ResourceV1().ResourceSlices().Update(ctx, other, dryUpdate)
	denied("the driver updating a slice of another node", "may not modify ResourceSlices of node "+otherNode, err)
	denied("the driver deleting a slice of another node", "may not modify ResourceSlices of node "+otherNode,
		sa.ResourceV1().ResourceSlices().Delete(ctx, other.Name, dryDelete))
}

// admissionTestSlice is a ResourceSlice of driver for the admission
// checks: of node, or with node "" a node selector of selectedNode.
func admissionTestSlice(driver, node, selectedNode string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "drakit-admission-test-"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver,
			Pool: resourceapi.ResourcePool{Name: "drakit-admission-test", ResourceSliceCount: 1}},
	}
	if node != "" {
		s.Spec.NodeName = &node
	} else {
		s.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{selectedNode}}},
		}}}
	}
	return s
}

// clusterAdmin returns the configuration and a client of the admin
// kubeconfig of the cluster an integration test runs against,
// $DRAKIT_KUBECONFIG, or skips the test without one: it needs the cluster
// with what deployed, by the commands howTo.
func clusterAdmin(t *testing.T, what, howTo string) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("no cluster: set DRAKIT_KUBECONFIG to the admin kubeconfig of a cluster with " + what + " deployed " +
			"(" + howTo + ", then eval \"$(drakit env status -o env)\")")
	}
	adminConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
	}
	admin, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	return adminConfig, admin
}

// podBoundClient returns a client of w's service account with a token
// bound to a running driver pod of w, as the kubelet projects it into the
// pod, and that pod. It fails the test unless the token carries the pod's
// node name, without which needsNode (what it is for) does not hold.
func podBoundClient(t *testing.T, admin kubernetes.Interface, adminConfig *rest.Config, w workload, needsNode string) (kubernetes.Interface, corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	pods, err := driverPods(ctx, admin, w)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" })
	if i < 0 {
		t.Fatalf("no running driver pod of %s in %s", w.name, w.namespace)
	}
	pod := pods[i]
	tr, err := admin.CoreV1().ServiceAccounts(w.namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token of service account %s/%s bound to pod %s: %v", w.namespace, pod.Spec.ServiceAccountName, pod.Name, err)
	}
	saConfig := rest.AnonymousClientConfig(adminConfig)
	saConfig.BearerToken = tr.Status.Token
	sa, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("review the service account's identity: %v", err)
	}
	if got := review.Status.UserInfo.Extra[serviceaccount.NodeNameKey]; len(got) != 1 || got[0] != pod.Spec.NodeName {
		t.Fatalf("the pod-bound token of %s carries node name %q, want [%s]: without it %s",
			review.Status.UserInfo.Username, got, pod.Spec.NodeName, needsNode)
	}
	return sa, pod
}
