package podgroups

import (
	"fmt"
	"strconv"

	"drakit.dev/drakit/conformance/kit"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PodGroups of KEP-5729: the objects the kit makes and how it judges what
// the control plane did with their claims (steps_podgroups.go).

// What reservedFor holds for a PodGroup (resourceclaim.BindTo).
const (
	podGroupAPIGroup = schedulingapi.GroupName
	podGroupResource = "podgroups"
)

// newPodGroup is a PodGroup of the kit with standard (basic) scheduling.
func newPodGroup(name string, claims ...schedulingapi.PodGroupResourceClaim) *schedulingapi.PodGroup {
	return &schedulingapi.PodGroup{
		ObjectMeta: kit.KitMeta(name),
		Spec: schedulingapi.PodGroupSpec{
			SchedulingPolicy: schedulingapi.PodGroupSchedulingPolicy{Basic: &schedulingapi.BasicSchedulingPolicy{}},
			ResourceClaims:   claims,
		},
	}
}

func templateGroupClaim(name, template string) schedulingapi.PodGroupResourceClaim {
	return schedulingapi.PodGroupResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)}
}

// podGroupClaimName is the ResourceClaim of the PodGroup's claim entry:
// found is false while the controller has not recorded a generated one.
func podGroupClaimName(pg *schedulingapi.PodGroup, entry string) (name string, found bool, err error) {
	for _, c := range pg.Spec.ResourceClaims {
		if c.Name != entry {
			continue
		}
		if c.ResourceClaimName != nil {
			return *c.ResourceClaimName, true, nil
		}
		for _, st := range pg.Status.ResourceClaimStatuses {
			if st.Name == entry && st.ResourceClaimName != nil {
				return *st.ResourceClaimName, true, nil
			}
		}
		return "", false, nil
	}
	return "", false, fmt.Errorf("PodGroup %s has no claim entry %s in spec.resourceClaims", pg.Name, entry)
}

// checkGroupOwnership checks that the claim is the one generated for the
// PodGroup's entry.
func checkGroupOwnership(label string, c *resourceapi.ResourceClaim, g *podGroupRecord, entry string) []string {
	var bad []string
	owner := metav1.GetControllerOf(c)
	switch {
	case owner == nil:
		bad = append(bad, fmt.Sprintf("%s has no controller owner, expected PodGroup %s", label, g.Name))
	case owner.APIVersion != schedulingapi.SchemeGroupVersion.String() || owner.Kind != "PodGroup" || owner.Name != g.Name || owner.UID != g.UID:
		bad = append(bad, fmt.Sprintf("%s is controlled by %s %s %s (uid %s), expected %s PodGroup %s (uid %s)",
			label, owner.APIVersion, owner.Kind, owner.Name, owner.UID, schedulingapi.SchemeGroupVersion, g.Name, g.UID))
	}
	if got, ok := c.Annotations[resourceapi.PodResourceClaimAnnotation]; !ok || got != entry {
		bad = append(bad, fmt.Sprintf("%s: annotation %s is %q, expected the PodGroup's claim entry %q", label, resourceapi.PodResourceClaimAnnotation, got, entry))
	}
	return bad
}

// checkGroupReservation compares status.reservedFor with the single entry
// that stands for the PodGroup.
func checkGroupReservation(label string, got []resourceapi.ResourceClaimConsumerReference, g *podGroupRecord) []string {
	want := resourceapi.ResourceClaimConsumerReference{APIGroup: podGroupAPIGroup, Resource: podGroupResource, Name: g.Name, UID: g.UID}
	if len(got) == 1 && got[0] == want {
		return nil
	}
	var seen []string
	for _, r := range got {
		seen = append(seen, fmt.Sprintf("{apiGroup %q, resource %q, name %q, uid %s}", r.APIGroup, r.Resource, r.Name, r.UID))
	}
	return []string{fmt.Sprintf("%s is reserved for %s, expected only {apiGroup %q, resource %q, name %q, uid %s}",
		label, kit.List(seen), want.APIGroup, want.Resource, want.Name, want.UID)}
}

// templateGroupClaims are n claim entries c0, c1, … of the template.
func templateGroupClaims(n int, template string) []schedulingapi.PodGroupResourceClaim {
	out := make([]schedulingapi.PodGroupResourceClaim, n)
	for i := range out {
		out[i] = templateGroupClaim("c"+strconv.Itoa(i), template)
	}
	return out
}
