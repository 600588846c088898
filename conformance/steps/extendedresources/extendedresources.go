package extendedresources

import (
	"fmt"
	"slices"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxGeneratedBase is how much of a generateName the API server keeps
// (names.SimpleNameGenerator: 63 characters less 5 random ones).
const maxGeneratedBase = 58

// checkExtendedClaim compares the claim the scheduler created for a pod's
// extended resources with what v1.37.2's scheduler writes; classes maps the
// extended resource names to their DeviceClasses.
func checkExtendedClaim(pod *corev1.Pod, c *resourceapi.ResourceClaim, classes map[corev1.ResourceName]string) []string {
	var bad []string
	label := fmt.Sprintf("claim %s of pod %s", c.Name, pod.Name)
	// The API server generates the name from at most the first
	// maxGeneratedBase characters of generateName.
	if want := pod.Name + "-extended-resources-"; c.GenerateName != want || !strings.HasPrefix(c.Name, want[:min(len(want), maxGeneratedBase)]) {
		bad = append(bad, fmt.Sprintf("%s: generateName %q, expected %q (and a name it starts)", label, c.GenerateName, want))
	}
	ref := metav1.GetControllerOfNoCopy(c)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name != pod.Name || ref.UID != pod.UID {
		bad = append(bad, fmt.Sprintf("%s: expected a controller ownerReference to Pod %s (uid %s), has %v", label, pod.Name, pod.UID, c.OwnerReferences))
	}
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return append(bad, fmt.Sprintf("pod %s: pod.status.extendedResourceClaimStatus is not set", pod.Name))
	}
	if st.ResourceClaimName != c.Name {
		bad = append(bad, fmt.Sprintf("pod %s: pod.status.extendedResourceClaimStatus names claim %q, the scheduler created %s", pod.Name, st.ResourceClaimName, c.Name))
	}
	wantReqs, wantMappings := expectedExtendedRequests(pod, classes)
	var got []string
	for _, r := range c.Spec.Devices.Requests {
		got = append(got, r.Name)
		want, ok := wantReqs[r.Name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: request %s is none the pod's extended resources ask for (expected %s)", label, r.Name, kit.List(sortedKeys(wantReqs))))
		case r.Exactly == nil:
			bad = append(bad, fmt.Sprintf("%s: request %s is not an exactly request", label, r.Name))
		case r.Exactly.DeviceClassName != want.DeviceClassName || r.Exactly.AllocationMode != resourceapi.DeviceAllocationModeExactCount || r.Exactly.Count != want.Count:
			bad = append(bad, fmt.Sprintf("%s: request %s asks for %s %d of DeviceClass %s, expected ExactCount %d of %s",
				label, r.Name, r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.DeviceClassName, want.Count, want.DeviceClassName))
		}
	}
	if !slices.Equal(kit.SortedCopy(got), sortedKeys(wantReqs)) {
		bad = append(bad, fmt.Sprintf("%s: requests %s, expected %s", label, kit.List(kit.SortedCopy(got)), kit.List(sortedKeys(wantReqs))))
	}
	if !slices.Equal(mappingStrings(st.RequestMappings), mappingStrings(wantMappings)) {
		bad = append(bad, fmt.Sprintf("pod %s: pod.status.extendedResourceClaimStatus maps %s, expected %s",
			pod.Name, kit.List(mappingStrings(st.RequestMappings)), kit.List(mappingStrings(wantMappings))))
	}
	if !slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
		return r.Resource == "pods" && r.Name == pod.Name && r.UID == pod.UID
	}) {
		bad = append(bad, fmt.Sprintf("%s: not reserved for the pod (reservedFor %v)", label, c.Status.ReservedFor))
	}
	return bad
}

// expectedExtendedRequests are the requests and mappings that v1.37.2's
// scheduler (createRequestsAndMappings) writes for the extended resources
// of the pod's regular containers that classes back: per container i
// (counting the init containers first) and resource, an ExactCount request
// container-<i>-request-<j> for the quantity, j being the resource's index
// in the container's sorted resource requests (cpu and memory included).
// The kit's pods have no init containers, whose requests the scheduler
// shares with the long-lived containers.
func expectedExtendedRequests(pod *corev1.Pod, classes map[corev1.ResourceName]string) (map[string]resourceapi.ExactDeviceRequest, []corev1.ContainerExtendedResourceRequest) {
	reqs := map[string]resourceapi.ExactDeviceRequest{}
	var mappings []corev1.ContainerExtendedResourceRequest
	for ci, c := range pod.Spec.Containers {
		requests := c.Resources.Requests
		if len(requests) == 0 {
			requests = c.Resources.Limits
		}
		var names []string
		for name := range requests {
			names = append(names, string(name))
		}
		slices.Sort(names)
		for j, name := range names {
			class, ok := classes[corev1.ResourceName(name)]
			q := requests[corev1.ResourceName(name)]
			if !ok || q.IsZero() {
				continue
			}
			reqName := fmt.Sprintf("container-%d-request-%d", len(pod.Spec.InitContainers)+ci, j)
			reqs[reqName] = resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: q.Value()}
			mappings = append(mappings, corev1.ContainerExtendedResourceRequest{ContainerName: c.Name, ResourceName: name, RequestName: reqName})
		}
	}
	return reqs, mappings
}

// mappingStrings are request mappings as sorted "container/resource→request".
func mappingStrings(ms []corev1.ContainerExtendedResourceRequest) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ContainerName+"/"+m.ResourceName+"→"+m.RequestName)
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// extendedQuotaResources are the quota resources that count n of the
// class's extended resource: requests.<resource name> (charged by the pod),
// requests.deviceclass.resource.kubernetes.io/<class> and
// <class>.deviceclass.resource.k8s.io/devices (charged by the claim).
func extendedQuotaResources(ec extendedClass) []corev1.ResourceName {
	return []corev1.ResourceName{
		corev1.ResourceName(corev1.DefaultResourceRequestsPrefix + ec.resource),
		corev1.ResourceName(corev1.ResourceImplicitExtendedClaimsPerClass + ec.class),
		kit.DeviceQuotaResource(ec.class),
	}
}

// resourceListChanges describes how a node's resource list changed.
func resourceListChanges(node, field string, before, after corev1.ResourceList) []string {
	var out []string
	for _, name := range sortedKeys(resourceNames(before, after)) {
		b, inBefore := before[corev1.ResourceName(name)]
		a, inAfter := after[corev1.ResourceName(name)]
		switch {
		case !inBefore:
			out = append(out, fmt.Sprintf("node %s: status.%s lists %s: %s, which it did not before the pod", node, field, name, a.String()))
		case !inAfter:
			out = append(out, fmt.Sprintf("node %s: status.%s no longer lists %s (was %s)", node, field, name, b.String()))
		case a.Cmp(b) != 0:
			out = append(out, fmt.Sprintf("node %s: status.%s %s is %s, was %s before the pod", node, field, name, a.String(), b.String()))
		}
	}
	return out
}

func resourceNames(lists ...corev1.ResourceList) map[string]bool {
	out := map[string]bool{}
	for _, l := range lists {
		for name := range l {
			out[string(name)] = true
		}
	}
	return out
}
