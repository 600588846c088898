package kit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestProbePod(t *testing.T) {
	t.Parallel()
	cfg := referenceDriverConfig()
	s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), apiHost: "127.0.0.1", apiPort: 16443}
	pod := ProbePod(s, "p", []PodClaim{{Name: "gpu", Template: "one-gpu"}, {Name: "shared", Claim: "shared"}})
	spec := pod.Spec
	if spec.HostNetwork || spec.RestartPolicy != corev1.RestartPolicyNever || ptr.Deref(spec.TerminationGracePeriodSeconds, 0) != 5 || spec.Affinity != nil || spec.NodeName != "" {
		t.Errorf("pod spec = hostNetwork %t, restartPolicy %s, grace %v, affinity %v, nodeName %q; want false, Never, 5, none, none",
			spec.HostNetwork, spec.RestartPolicy, spec.TerminationGracePeriodSeconds, spec.Affinity, spec.NodeName)
	}
	c := spec.Containers[0]
	if diff := cmp.Diff([]string{"/usr/bin/drakit-probe", "--hold"}, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if c.Image != "drakit.dev/probe:dev" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image = %s (%s), want drakit.dev/probe:dev (Never)", c.Image, c.ImagePullPolicy)
	}
	wantEnv := []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: "16443"}}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	wantClaims := []corev1.PodResourceClaim{
		{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")},
		{Name: "shared", ResourceClaimName: ptr.To("shared")},
	}
	if diff := cmp.Diff(wantClaims, spec.ResourceClaims); diff != "" {
		t.Errorf("resourceClaims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "gpu"}, {Name: "shared"}}, c.Resources.Claims); diff != "" {
		t.Errorf("container claims (-want +got):\n%s", diff)
	}
}

// A probe pod of a kit that names the node under test is required to run
// there (by node affinity: the scheduler must still allocate its claims),
// and uses the host network only where the cluster needs it.
func TestProbePodOnTheNodeUnderTest(t *testing.T) {
	t.Parallel()
	cfg := referenceDriverConfig()
	cfg.NodeName, cfg.ProbeHostNetwork = "node-b", true
	spec := ProbePod(&Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration)}, "p", nil).Spec
	if !spec.HostNetwork || spec.NodeName != "" {
		t.Errorf("hostNetwork %t, nodeName %q; want true and no nodeName", spec.HostNetwork, spec.NodeName)
	}
	want := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}}}},
	}}}
	if diff := cmp.Diff(want, spec.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
}

func TestDefectClaims(t *testing.T) {
	t.Parallel()
	c, err := DefectClaim("bad", "33 requests", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Spec.Devices.Requests); n != 33 {
		t.Errorf("33 requests: got %d", n)
	}
	c, err = DefectClaim("bad", "count -1 in an ExactCount request", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Spec.Devices.Requests[0].Exactly; r.Count != -1 || r.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
		t.Errorf("count -1: got %+v", r)
	}
	c, err = DefectClaim("bad", "a CEL selector that does not compile", "gpu.drakit.dev")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Spec.Devices.Requests[0].Exactly.Selectors); n != 1 {
		t.Errorf("CEL: %d selectors, want 1", n)
	}
	_, err = DefectClaim("bad", "a typo", "gpu.drakit.dev")
	if err == nil || !strings.Contains(err.Error(), `unknown claim defect "a typo"`) || !strings.Contains(err.Error(), `"33 requests"`) {
		t.Errorf("unknown defect: got %v, want an error listing the known ones", err)
	}
}

func TestWithMatchAttribute(t *testing.T) {
	t.Parallel()
	spec := WithMatchAttribute(ClaimSpec("gpu.drakit.dev", 2), "resource.kubernetes.io/numaNode")
	if len(spec.Devices.Constraints) != 1 || ptr.Deref(spec.Devices.Constraints[0].MatchAttribute, "") != "resource.kubernetes.io/numaNode" {
		t.Errorf("constraints = %+v", spec.Devices.Constraints)
	}
	if spec.Devices.Requests[0].Exactly.Count != 2 {
		t.Errorf("count = %d, want 2", spec.Devices.Requests[0].Exactly.Count)
	}
}

func TestCheckInvalid(t *testing.T) {
	t.Parallel()
	gk := schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaim"}
	invalid := apierrors.NewInvalid(gk, "bad", field.ErrorList{
		field.TooMany(field.NewPath("spec", "devices", "requests"), 33, 32),
		field.Invalid(field.NewPath("spec", "devices", "requests").Index(0).Child("exactly", "count"), -1, "must be greater than zero"),
	})
	tests := map[string]struct {
		Err                error
		cause, field, text string
		want               string // empty: accepted
	}{
		"TooMany at the path":      {Err: invalid, cause: "TooMany", field: "spec.devices.requests"},
		"full cause type":          {Err: invalid, cause: "FieldValueInvalid", field: "spec.devices.requests[0].exactly.count"},
		"right type, wrong path":   {Err: invalid, cause: "Invalid", field: "spec.devices.requests[0].count", want: "no cause is FieldValueInvalid at spec.devices.requests[0].count; causes: FieldValueTooMany at spec.devices.requests"},
		"wrong type at the path":   {Err: invalid, cause: "Required", field: "spec.devices.requests", want: "no cause is FieldValueRequired at spec.devices.requests"},
		"with its message":         {Err: invalid, cause: "Invalid", field: "spec.devices.requests[0].exactly.count", text: "greater than zero"},
		"another message":          {Err: invalid, cause: "TooMany", field: "spec.devices.requests", text: "immutable", want: `no cause is FieldValueTooMany at spec.devices.requests saying "immutable"; causes: FieldValueTooMany at spec.devices.requests (Too many: 33: must have at most 32 items)`},
		"accepted":                 {Err: nil, cause: "Invalid", field: "x", want: "the API server accepted ResourceClaim bad; expected 422 Invalid with a FieldValueInvalid cause at x"},
		"rejected for other cause": {Err: apierrors.NewForbidden(schema.GroupResource{Resource: "resourceclaims"}, "bad", nil), cause: "Invalid", field: "x", want: "was rejected, but not as Invalid (reason Forbidden)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := checkInvalid("ResourceClaim bad", tc.Err, tc.cause, tc.field, tc.text)
			if tc.want == "" {
				if err != nil {
					t.Errorf("checkInvalid: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkInvalid: got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckReservedFor(t *testing.T) {
	t.Parallel()
	want := map[types.UID]string{"uid-a": "a", "uid-b": "b"}
	ref := func(name, uid string) resourceapi.ResourceClaimConsumerReference {
		return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: types.UID(uid)}
	}
	tests := map[string]struct {
		got  []resourceapi.ResourceClaimConsumerReference
		want []string
	}{
		"both pods": {got: []resourceapi.ResourceClaimConsumerReference{ref("b", "uid-b"), ref("a", "uid-a")}},
		"one missing": {
			got:  []resourceapi.ResourceClaimConsumerReference{ref("a", "uid-a")},
			want: []string{"claim c is not reserved for pod b (uid uid-b)"},
		},
		"a stranger": {
			got:  []resourceapi.ResourceClaimConsumerReference{ref("a", "uid-a"), ref("b", "uid-b"), ref("z", "uid-z")},
			want: []string{"claim c is reserved for pods z (uid uid-z), which is not one of the expected pods"},
		},
		"wrong resource": {
			got: []resourceapi.ResourceClaimConsumerReference{ref("a", "uid-a"),
				{APIGroup: "apps", Resource: "deployments", Name: "b", UID: "uid-b"}},
			want: []string{`claim c: reservedFor entry for uid uid-b is {apiGroup "apps", resource "deployments", name "b"}, expected the core pod b`},
		},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, CheckReservedFor("c", tc.got, want)); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s", name, diff)
		}
	}
}

func TestCheckSameAttribute(t *testing.T) {
	t.Parallel()
	devices := publishedDevices([]resourceapi.ResourceSlice{
		slice("a", testDriver, "n", "n", 1, gpu("gpu-0", "A0", 0), gpu("gpu-1", "A1", 0), gpu("gpu-2", "A2", 1),
			resourceapi.Device{Name: "gpu-9"}),
	}, testDriver)
	res := func(names ...string) []resourceapi.DeviceRequestAllocationResult {
		var out []resourceapi.DeviceRequestAllocationResult
		for _, n := range names {
			out = append(out, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: testDriver, Pool: "n", Device: n})
		}
		return out
	}
	const numa = "resource.kubernetes.io/numaNode"
	tests := map[string]struct {
		results []resourceapi.DeviceRequestAllocationResult
		want    []string
	}{
		"same NUMA node": {results: res("gpu-0", "gpu-1")},
		"different":      {results: res("gpu-0", "gpu-2"), want: []string{"claim pair: the allocated devices have different values of resource.kubernetes.io/numaNode despite the matchAttribute constraint: resource.kubernetes.io/numaNode=0 on n/gpu-0; resource.kubernetes.io/numaNode=1 on n/gpu-2"}},
		"no attribute":   {results: res("gpu-0", "gpu-9"), want: []string{"claim pair: allocated device n/gpu-9 has no attribute resource.kubernetes.io/numaNode"}},
		"unknown device": {results: res("gpu-0", "gpu-7"), want: []string{"claim pair: allocated device n/gpu-7 is not in any ResourceSlice of driver gpu.drakit.dev"}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, checkSameAttribute("pair", numa, testDriver, tc.results, devices)); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s", name, diff)
		}
	}
}

func TestDiagnosticsFileName(t *testing.T) {
	t.Parallel()
	tests := map[[2]string]string{
		{"A pod with a ResourceClaimTemplate for one GPU sees exactly that GPU", "17"}: "a-pod-with-a-resourceclaimtemplate-for-one-gpu-sees-exactly-that-gpu-17.txt",
		{"../../etc/passwd", "3"}:       "etc-passwd-3.txt",
		{"!!!", "a-b"}:                  "scenario-ab.txt",
		{strings.Repeat("x", 200), "1"}: strings.Repeat("x", 80) + "-1.txt",
	}
	for in, want := range tests {
		if got := diagnosticsFileName(in[0], in[1]); got != want {
			t.Errorf("diagnosticsFileName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}
