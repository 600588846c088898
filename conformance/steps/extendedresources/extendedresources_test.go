package extendedresources

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// extendedTestPod asks, in its second container, for 2 of example.com/b,
// 1 of example.com/a (both backed by classes) and some cpu, behind one
// init container: the scheduler numbers that container 2 and the
// resources by their sorted position among all three (cpu first).
func extendedTestPod() *corev1.Pod {
	q := resource.MustParse
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{
				{Name: "plain"},
				{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					"example.com/b": q("2"), "example.com/a": q("1"), corev1.ResourceCPU: q("100m"),
				}}},
			},
		},
		Status: corev1.PodStatus{ExtendedResourceClaimStatus: &corev1.PodExtendedResourceClaimStatus{
			ResourceClaimName: "app-extended-resources-x7k2p",
			RequestMappings: []corev1.ContainerExtendedResourceRequest{
				{ContainerName: "main", ResourceName: "example.com/b", RequestName: "container-2-request-2"},
				{ContainerName: "main", ResourceName: "example.com/a", RequestName: "container-2-request-1"},
			},
		}},
	}
}

var extendedTestClasses = map[corev1.ResourceName]string{"example.com/a": "class-a", "example.com/b": "class-b"}

func TestExpectedExtendedRequests(t *testing.T) {
	t.Parallel()
	reqs, mappings := expectedExtendedRequests(extendedTestPod(), extendedTestClasses)
	want := map[string]resourceapi.ExactDeviceRequest{
		"container-2-request-1": {DeviceClassName: "class-a", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		"container-2-request-2": {DeviceClassName: "class-b", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
	}
	if len(reqs) != len(want) {
		t.Fatalf("requests %v, want %v", reqs, want)
	}
	for name, w := range want {
		if got, ok := reqs[name]; !ok || got.DeviceClassName != w.DeviceClassName || got.AllocationMode != w.AllocationMode || got.Count != w.Count {
			t.Errorf("request %s = %+v, want %+v", name, got, w)
		}
	}
	if got, wantM := mappingStrings(mappings), []string{"main/example.com/a→container-2-request-1", "main/example.com/b→container-2-request-2"}; !slices.Equal(got, wantM) {
		t.Errorf("mappings %v, want %v", got, wantM)
	}
}

// extendedTestClaim is the claim v1.37.2's scheduler writes for
// extendedTestPod.
func extendedTestClaim() *resourceapi.ResourceClaim {
	exact := func(name, class string, n int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app-extended-resources-x7k2p", GenerateName: "app-extended-resources-",
			Annotations:     map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: "pod-uid", Controller: ptr.To(true)}},
		},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			exact("container-2-request-1", "class-a", 1), exact("container-2-request-2", "class-b", 2),
		}}},
		Status: resourceapi.ResourceClaimStatus{ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "app", UID: "pod-uid"}}},
	}
}

func TestCheckExtendedClaim(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		change func(*corev1.Pod, *resourceapi.ResourceClaim)
		want   string // "" for no finding
	}{
		"as the scheduler writes it": {func(*corev1.Pod, *resourceapi.ResourceClaim) {}, ""},
		"another generateName": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) { c.GenerateName = "app-" },
			`generateName "app-", expected "app-extended-resources-"`},
		"no controller": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) { c.OwnerReferences[0].Controller = nil },
			"expected a controller ownerReference to Pod app"},
		"owned by a former pod": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) { c.OwnerReferences[0].UID = "old" },
			"expected a controller ownerReference to Pod app"},
		"no status": {func(p *corev1.Pod, _ *resourceapi.ResourceClaim) { p.Status.ExtendedResourceClaimStatus = nil },
			"pod.status.extendedResourceClaimStatus is not set"},
		"status names another claim": {func(p *corev1.Pod, _ *resourceapi.ResourceClaim) {
			p.Status.ExtendedResourceClaimStatus.ResourceClaimName = "other"
		}, `names claim "other"`},
		"one request for both resources": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests = c.Spec.Devices.Requests[:1]
		}, "requests [container-2-request-1], expected [container-2-request-1, container-2-request-2]"},
		"containers counted without the init container": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[0].Name = "container-1-request-1"
		}, "request container-1-request-1 is none the pod's extended resources ask for"},
		"count other than the quantity": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) {
			c.Spec.Devices.Requests[1].Exactly.Count = 1
		}, "request container-2-request-2 asks for ExactCount 1 of DeviceClass class-b, expected ExactCount 2 of class-b"},
		"mapping to the wrong request": {func(p *corev1.Pod, _ *resourceapi.ResourceClaim) {
			p.Status.ExtendedResourceClaimStatus.RequestMappings[0].RequestName = "container-2-request-1"
		}, "pod.status.extendedResourceClaimStatus maps"},
		"not reserved for the pod": {func(_ *corev1.Pod, c *resourceapi.ResourceClaim) { c.Status.ReservedFor = nil },
			"not reserved for the pod"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod, claim := extendedTestPod(), extendedTestClaim()
			tc.change(pod, claim)
			bad := checkExtendedClaim(pod, claim, extendedTestClasses)
			switch {
			case tc.want == "" && len(bad) > 0:
				t.Errorf("findings %q, want none", bad)
			case tc.want != "" && !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, tc.want) }):
				t.Errorf("findings %q, want one containing %q", bad, tc.want)
			}
		})
	}
}

func TestResourceListChanges(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	before := corev1.ResourceList{corev1.ResourceCPU: q("8"), corev1.ResourceMemory: q("64Gi"), "example.com/gone": q("1")}
	after := corev1.ResourceList{corev1.ResourceCPU: q("8000m"), corev1.ResourceMemory: q("62Gi"), "conformance.drakit.dev/x": q("2")}
	got := resourceListChanges("n1", "allocatable", before, after)
	want := []string{
		"node n1: status.allocatable lists conformance.drakit.dev/x: 2, which it did not before the pod",
		"node n1: status.allocatable no longer lists example.com/gone (was 1)",
		"node n1: status.allocatable memory is 62Gi, was 64Gi before the pod",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := resourceListChanges("n1", "capacity", before, before.DeepCopy()); len(got) != 0 {
		t.Errorf("unchanged list: %q", got)
	}
}

func TestExtendedQuotaResources(t *testing.T) {
	t.Parallel()
	got := extendedQuotaResources(extendedClass{class: "ns-gpus", resource: "conformance.drakit.dev/ns-gpus"})
	want := []corev1.ResourceName{
		"requests.conformance.drakit.dev/ns-gpus",
		"requests.deviceclass.resource.kubernetes.io/ns-gpus",
		"ns-gpus.deviceclass.resource.k8s.io/devices",
	}
	if !slices.Equal(got, want) {
		t.Errorf("quota resources %v, want %v", got, want)
	}
}
