package live

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// cluster is a fake cluster with node n1 and two GPUs of gpu.example.com,
// gpu-0 allocated to claim busy.
func cluster(t *testing.T, claims ...*resourceapi.ResourceClaim) *fake.Clientset {
	t.Helper()
	model := func(m string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To(m)}}
	}
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: corev1.NodeSpec{Unschedulable: true}},
		&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}},
		&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: ptr.To("n1"), Pool: resourceapi.ResourcePool{Name: "n1", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0", Attributes: model("a100")}, {Name: "gpu-1", Attributes: model("h100")}},
		}},
		claim("busy", "", 1, &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: "n1", Device: "gpu-0"}}}}),
	}
	kube := fake.NewClientset(objs...)
	for _, c := range claims {
		if _, err := kube.ResourceV1().ResourceClaims(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return kube
}

func claim(name, selector string, count int64, alloc *resourceapi.AllocationResult) *resourceapi.ResourceClaim {
	req := resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	if selector != "" {
		req.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:   resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}},
		Status: resourceapi.ResourceClaimStatus{Allocation: alloc}}
}

func TestExplainClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	features := FeaturesFromGates([]string{"DRAPrioritizedList"})
	kube := cluster(t,
		claim("two", "", 2, nil),
		claim("b200", `device.attributes["gpu.example.com"].model == "b200"`, 1, nil),
		claim("fits", "", 1, nil),
	)
	for _, tc := range []struct {
		claims []string
		want   []string
	}{
		// Only gpu-1 is free: the cordoned node is not tried.
		{[]string{"two"}, []string{"claim ns/two: not allocated; the reference allocator finds an allocation on 0 of 1 nodes",
			"node n1: does not fit — claim ns/two, request gpu: needs 2 devices, only 1 devices on node n1 are unallocated"}},
		{[]string{"b200"}, []string{"node n1: does not fit — claim ns/b200, request gpu could not be satisfied",
			"device gpu-1: in its device class, but its selectors do not select it", "device gpu-0: already allocated to another claim"}},
		{[]string{"fits"}, []string{"finds an allocation on 1 of 1 nodes", "node n1: fits — claim fits request gpu: gpu.example.com/n1/gpu-1"}},
		{[]string{"busy"}, []string{"claim ns/busy is allocated: nothing to explain"}},
	} {
		var refs []types.NamespacedName
		for _, c := range tc.claims {
			refs = append(refs, types.NamespacedName{Namespace: "ns", Name: c})
		}
		ex, err := ExplainClaims(ctx, kube, features, "", refs)
		if err != nil {
			t.Fatalf("%v: %v", tc.claims, err)
		}
		got := ex.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: explanation lacks %q:\n%s", tc.claims, w, got)
			}
		}
	}
	if _, err := ExplainClaims(ctx, kube, features, "", []types.NamespacedName{{Namespace: "ns", Name: "nope"}}); err == nil {
		t.Error("a claim that does not exist: no error")
	}
}

func TestPodClaims(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: "shared", ResourceClaimName: ptr.To("shared-claim")},
			{Name: "own", ResourceClaimTemplateName: ptr.To("tmpl")},
		}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "own", ResourceClaimName: ptr.To("p-own-x1")}}},
	}, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "waiting"},
		Spec:       corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "own", ResourceClaimTemplateName: ptr.To("tmpl")}}},
	})
	got, err := PodClaims(context.Background(), kube, types.NamespacedName{Namespace: "ns", Name: "p"})
	if err != nil || len(got) != 2 || got[0].Name != "shared-claim" || got[1].Name != "p-own-x1" {
		t.Errorf("claims %v, %v", got, err)
	}
	if _, err := PodClaims(context.Background(), kube, types.NamespacedName{Namespace: "ns", Name: "waiting"}); err == nil || !strings.Contains(err.Error(), "has no ResourceClaim yet") {
		t.Errorf("a claim not generated yet: %v", err)
	}
}

// A DeviceTaintRule's taint counts as the scheduler counts it: on the
// devices it selects, not on the others.
func TestExplainClaimsAppliesDeviceTaintRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	features := FeaturesFromGates([]string{"DRADeviceTaints"})
	kube := cluster(t, claim("fits", "", 1, nil))
	rule := func(name, device string) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Pool: ptr.To("n1"), Device: ptr.To(device)},
			Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}}}
	}
	refs := []types.NamespacedName{{Namespace: "ns", Name: "fits"}}
	// gpu-0 is in use anyway: its taint changes nothing.
	if _, err := kube.ResourceV1().DeviceTaintRules().Create(ctx, rule("busy-device", "gpu-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ex, err := ExplainClaims(ctx, kube, features, "", refs)
	if err != nil {
		t.Fatal(err)
	}
	if got := ex.String(); !strings.Contains(got, "node n1: fits") {
		t.Errorf("a taint on the device in use keeps the claim from gpu-1:\n%s", got)
	}
	if _, err := kube.ResourceV1().DeviceTaintRules().Create(ctx, rule("free-device", "gpu-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ex, err = ExplainClaims(ctx, kube, features, "", refs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ex.String(), "it has taint example.com/maintenance=:NoSchedule, which the request does not tolerate"; !strings.Contains(got, want) {
		t.Errorf("explanation lacks %q:\n%s", want, got)
	}
}
