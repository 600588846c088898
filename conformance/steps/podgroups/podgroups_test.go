package podgroups

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestPodGroupClaimName(t *testing.T) {
	t.Parallel()
	pg := newPodGroup("g", templateGroupClaim("dev", "one"), schedulingapi.PodGroupResourceClaim{Name: "shared", ResourceClaimName: ptr.To("pre")})
	if _, found, err := podGroupClaimName(pg, "dev"); found || err != nil {
		t.Errorf("template entry before the controller recorded it: found %t, err %v; want not found, no error", found, err)
	}
	pg.Status.ResourceClaimStatuses = []schedulingapi.PodGroupResourceClaimStatus{{Name: "dev", ResourceClaimName: ptr.To("g-dev-x7k2q")}}
	if name, found, err := podGroupClaimName(pg, "dev"); name != "g-dev-x7k2q" || !found || err != nil {
		t.Errorf("template entry: got %q, %t, %v; want g-dev-x7k2q from the status", name, found, err)
	}
	if name, found, err := podGroupClaimName(pg, "shared"); name != "pre" || !found || err != nil {
		t.Errorf("named entry: got %q, %t, %v; want pre", name, found, err)
	}
	if _, _, err := podGroupClaimName(pg, "other"); err == nil || !strings.Contains(err.Error(), "no claim entry other") {
		t.Errorf("unknown entry: got %v, want an error naming it", err)
	}
}

func TestCheckGroupReservation(t *testing.T) {
	t.Parallel()
	g := &podGroupRecord{Name: "g", UID: "uid-g"}
	group := resourceapi.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "g", UID: "uid-g"}
	pod := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "p", UID: "uid-p"}
	tests := map[string]struct {
		got  []resourceapi.ResourceClaimConsumerReference
		want string // empty: no finding
	}{
		"the group alone":     {got: []resourceapi.ResourceClaimConsumerReference{group}},
		"the group and a pod": {got: []resourceapi.ResourceClaimConsumerReference{group, pod}, want: `resource "pods", name "p"`},
		"a pod only":          {got: []resourceapi.ResourceClaimConsumerReference{pod}, want: `expected only {apiGroup "scheduling.k8s.io", resource "podgroups", name "g", uid uid-g}`},
		"nobody":              {want: "is reserved for nothing"},
		"another instance":    {got: []resourceapi.ResourceClaimConsumerReference{{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "g", UID: "uid-old"}}, want: "uid uid-old"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bad := checkGroupReservation("claim c", tc.got, g)
			switch {
			case tc.want == "" && len(bad) > 0:
				t.Errorf("findings %v, want none", bad)
			case tc.want != "" && (len(bad) != 1 || !strings.Contains(bad[0], tc.want)):
				t.Errorf("findings %v, want one containing %q", bad, tc.want)
			}
		})
	}
}

func TestCheckGroupOwnership(t *testing.T) {
	t.Parallel()
	g := &podGroupRecord{Name: "g", UID: "uid-g"}
	claim := func(kind, apiVersion, uid, entry string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
			Name:            "g-dev-x7k2q",
			Annotations:     map[string]string{resourceapi.PodResourceClaimAnnotation: entry},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "g", UID: types.UID("uid-" + uid), Controller: ptr.To(true)}},
		}}
	}
	if bad := checkGroupOwnership("claim dev", claim("PodGroup", "scheduling.k8s.io/v1beta1", "g", "dev"), g, "dev"); len(bad) > 0 {
		t.Errorf("the group's own claim: findings %v", bad)
	}
	if bad := checkGroupOwnership("claim dev", claim("Pod", "v1", "p", "dev"), g, "dev"); len(bad) != 1 || !strings.Contains(bad[0], "is controlled by v1 Pod g") {
		t.Errorf("a pod's claim: findings %v, want one naming the pod owner", bad)
	}
	if bad := checkGroupOwnership("claim dev", claim("PodGroup", "scheduling.k8s.io/v1beta1", "g", "other"), g, "dev"); len(bad) != 1 || !strings.Contains(bad[0], `annotation resource.kubernetes.io/pod-claim-name is "other"`) {
		t.Errorf("another entry's claim: findings %v, want one naming the annotation", bad)
	}
	orphan := claim("PodGroup", "scheduling.k8s.io/v1beta1", "g", "dev")
	orphan.OwnerReferences[0].Controller = nil
	if bad := checkGroupOwnership("claim dev", orphan, g, "dev"); len(bad) != 1 || !strings.Contains(bad[0], "has no controller owner") {
		t.Errorf("a claim without controller: findings %v", bad)
	}
}

func TestTemplateGroupClaims(t *testing.T) {
	t.Parallel()
	got := templateGroupClaims(5, "one")
	if len(got) != 5 || got[0].Name != "c0" || got[4].Name != "c4" || ptr.Deref(got[3].ResourceClaimTemplateName, "") != "one" || got[2].ResourceClaimName != nil {
		t.Errorf("templateGroupClaims(5, one) = %+v", got)
	}
}
