package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
)

// TestIntegrationNICStatusAuthorization checks the NIC driver's RBAC on a
// real API server (granular status authorization, KEP-4817): with the
// token its pod gets, the driver's service account may write and remove
// the status.devices entries of its own driver in a claim allocated on its
// node, and nothing else: not another driver's entry, not a claim of
// another node, not a claim that is not allocated, not status.allocation,
// not with update, and it may not list claims. The admin allocates test
// claims by hand (no pod, no scheduler) in a namespace of their own, which
// the test deletes. It runs when DRAKIT_KUBECONFIG names the admin
// kubeconfig of a cluster with the NIC driver deployed (drakit nic-driver
// deploy; `eval "$(drakit env status -o env)"` sets it for the local
// cluster); the driver needs no NICs for it.
func TestIntegrationNICStatusAuthorization(t *testing.T) {
	adminConfig, admin := clusterAdmin(t, "the NIC driver", "make cluster-up, drakit driver deploy --kind nic")
	ctx := t.Context()
	role, err := admin.RbacV1().ClusterRoles().Get(ctx, NICName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the NIC driver's cluster role (is it deployed? drakit driver deploy --kind nic): %v", err)
	}
	driver := ""
	for _, r := range role.Rules {
		if slices.Equal(r.Resources, []string{"resourceclaims/driver"}) && len(r.ResourceNames) == 1 {
			driver = r.ResourceNames[0]
		}
	}
	if driver == "" {
		t.Fatalf("cluster role %s has no rule on resourceclaims/driver for one driver: %+v", NICName, role.Rules)
	}
	sa, pod := podBoundClient(t, admin, adminConfig, nicWorkload, "associated-node never holds")
	node := pod.Spec.NodeName
	const otherNode = "drakit-nic-status-test-no-such-node"

	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drakit-nic-status-test-"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the test namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := admin.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the test namespace %s: %v", ns.Name, err)
		}
	})
	const otherDriver = "other.drakit.dev"
	// claim creates a claim with requests nic and other and, with a node,
	// allocates it there by hand as the scheduler would: nic to a device
	// of the driver, other to a device of another driver.
	claim := func(name, allocatedOn string) *resourceapi.ResourceClaim {
		t.Helper()
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
				{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: driver}},
				{Name: "other", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: otherDriver}},
			}}},
		}
		c, err := admin.ResourceV1().ResourceClaims(ns.Name).Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create claim %s: %v", name, err)
		}
		if allocatedOn == "" {
			return c
		}
		c.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "nic", Driver: driver, Pool: allocatedOn, Device: "nic-0000-3b-00-0-vf0"},
				{Request: "other", Driver: otherDriver, Pool: allocatedOn, Device: "dev-0"},
			}},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{allocatedOn}}},
			}}},
		}
		c, err = admin.ResourceV1().ResourceClaims(ns.Name).UpdateStatus(ctx, c, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("allocate claim %s on node %s as the admin: %v", name, allocatedOn, err)
		}
		return c
	}
	mine := claim("on-the-drivers-node", node)
	elsewhere := claim("on-another-node", otherNode)
	unallocated := claim("not-allocated", "")

	// entry is a status.devices entry of device, as the driver writes it.
	entry := func(drv, pool, device string) *resourceapply.AllocatedDeviceStatusApplyConfiguration {
		return resourceapply.AllocatedDeviceStatus().WithDriver(drv).WithPool(pool).WithDevice(device).
			WithNetworkData(resourceapply.NetworkDeviceData().WithInterfaceName("ens1f0v0").WithHardwareAddress("02:00:00:00:01:00"))
	}
	apply := func(c kubernetes.Interface, claim *resourceapi.ResourceClaim, uid types.UID, entries ...*resourceapply.AllocatedDeviceStatusApplyConfiguration) error {
		ac := resourceapply.ResourceClaim(claim.Name, claim.Namespace).WithUID(uid).WithStatus(resourceapply.ResourceClaimStatus().WithDevices(entries...))
		_, err := c.ResourceV1().ResourceClaims(claim.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: driver, Force: true})
		return err
	}
	statusDevices := func(claim *resourceapi.ResourceClaim) []string {
		t.Helper()
		c, err := admin.ResourceV1().ResourceClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range c.Status.Devices {
			out = append(out, d.Driver+"/"+d.Device)
		}
		return out
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it refused with %q", what, err, want)
		}
	}

	// Allowed: the driver's own entry of a claim on its node, written and
	// removed (no entries) by server-side apply.
	if err := apply(sa, mine, mine.UID, entry(driver, node, "nic-0000-3b-00-0-vf0")); err != nil {
		t.Fatalf("the driver writing its entry of a claim allocated on its node: %v, want it allowed", err)
	}
	if got, want := statusDevices(mine), []string{driver + "/nic-0000-3b-00-0-vf0"}; !slices.Equal(got, want) {
		t.Errorf("status.devices %v after the driver's write, want %v", got, want)
	}
	if err := apply(sa, mine, mine.UID); err != nil {
		t.Errorf("the driver removing its entries: %v, want it allowed", err)
	}
	if got := statusDevices(mine); len(got) != 0 {
		t.Errorf("status.devices %v after the driver removed its entries, want none", got)
	}

	const driverDenied = `changing status.devices requires resource="resourceclaims/driver"`
	refused("the driver writing another driver's entry", apply(sa, mine, mine.UID, entry(otherDriver, node, "dev-0")), driverDenied)
	refused("the driver writing its entry of a claim allocated on another node",
		apply(sa, elsewhere, elsewhere.UID, entry(driver, otherNode, "nic-0000-3b-00-0-vf0")), driverDenied)
	refused("the driver writing an entry of a claim that is not allocated",
		apply(sa, unallocated, unallocated.UID, entry(driver, node, "nic-0000-3b-00-0-vf0")), "must be an allocated device in the claim")

	// status.allocation needs resourceclaims/binding.
	dealloc := mine.DeepCopy()
	dealloc.Status.Allocation = nil
	_, err = sa.ResourceV1().ResourceClaims(ns.Name).UpdateStatus(ctx, dealloc, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the driver updating a claim's status: %v, want it forbidden (no update on resourceclaims/status)", err)
	}
	ac := resourceapply.ResourceClaim(mine.Name, ns.Name).WithStatus(resourceapply.ResourceClaimStatus().WithAllocation(
		resourceapply.AllocationResult().WithDevices(resourceapply.DeviceAllocationResult().WithResults(
			resourceapply.DeviceRequestAllocationResult().WithRequest("nic").WithDriver(driver).WithPool(node).WithDevice("nic-0000-3b-00-0-vf1")))))
	_, err = sa.ResourceV1().ResourceClaims(ns.Name).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: "drakit-nic-status-test", Force: true})
	if err == nil || !strings.Contains(err.Error(), "status.allocation") {
		t.Errorf("the driver changing status.allocation: %v, want it refused (resourceclaims/binding, or an allocation may not change)", err)
	}
	if _, err := sa.ResourceV1().ResourceClaims(ns.Name).Get(ctx, mine.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the driver reading a claim: %v, want it allowed (the kubelet plugin helper reads claims)", err)
	}
	if _, err := sa.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the driver listing claims: %v, want it forbidden", err)
	}

	// The driver's writes carry the claim's UID: what the API server does
	// with one that is not the claim's, as the admin (no authorization in
	// the way).
	if err := apply(admin, mine, types.UID("00000000-0000-0000-0000-000000000000"), entry(driver, node, "nic-0000-3b-00-0-vf0")); err == nil {
		t.Errorf("a status apply with another claim's UID succeeded; the driver's UID does not keep it from writing a replaced claim's status "+
			"(status.devices now %v)", statusDevices(mine))
	} else {
		t.Logf("a status apply with another claim's UID is refused: %v", err)
	}
}
