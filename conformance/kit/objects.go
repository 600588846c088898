package kit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// requestName is the name of the single request in the kit's claims.
const RequestName = "gpu"

// probeContainer is the name of the probe's container in the kit's pods.
const ProbeContainer = "probe"

// Probe pods end within this grace period; the probe exits on SIGTERM at
// once, so this only bounds a misbehaving container.
const probeGracePeriodSeconds = 5

func KitMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManagedBy: ManagedByKit}}
}

// exactRequest is a request named name for count devices of class.
func ExactRequest(name, class string, count int64, selectors ...string) resourceapi.DeviceRequest {
	req := resourceapi.DeviceRequest{
		Name: name,
		Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: class,
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           count,
		},
	}
	for _, expr := range selectors {
		req.Exactly.Selectors = append(req.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expr}})
	}
	return req
}

// claimSpec asks for count devices of class in one request.
func ClaimSpec(class string, count int64, selectors ...string) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{ExactRequest(RequestName, class, count, selectors...)},
	}}
}

func NewClaim(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: KitMeta(name), Spec: spec}
}

func newClaimTemplate(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: KitMeta(name),
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: spec},
	}
}

// withMatchAttribute constrains all requests of spec to the same value of
// attr (a fully qualified name).
func WithMatchAttribute(spec resourceapi.ResourceClaimSpec, attr string) resourceapi.ResourceClaimSpec {
	fq := resourceapi.FullyQualifiedName(attr)
	spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{MatchAttribute: &fq})
	return spec
}

// claimDefects are the claims the validation scenarios submit, by the text
// that names them in the features.
var claimDefects = map[string]func(class string) resourceapi.ResourceClaimSpec{
	"count -1 in an ExactCount request": func(class string) resourceapi.ResourceClaimSpec {
		return ClaimSpec(class, -1)
	},
	"count 0 in an ExactCount request": func(class string) resourceapi.ResourceClaimSpec {
		return ClaimSpec(class, 0)
	},
	"a CEL selector that does not compile": func(class string) resourceapi.ResourceClaimSpec {
		return ClaimSpec(class, 1, `device.driver ==`)
	},
	"33 requests": func(class string) resourceapi.ResourceClaimSpec {
		var spec resourceapi.ResourceClaimSpec
		for i := range resourceapi.DeviceRequestsMaxSize + 1 {
			spec.Devices.Requests = append(spec.Devices.Requests, ExactRequest("gpu-"+strconv.Itoa(i), class, 1))
		}
		return spec
	},
	// KEP-6080 derived attributes (dra-1.37-spec.md §16).
	"a derived attribute that no constraint references": func(class string) resourceapi.ResourceClaimSpec {
		return DerivedSpec(class, "derived/driver", "device.driver", false)
	},
	"a derived attribute whose expression returns a map": func(class string) resourceapi.ResourceClaimSpec {
		return DerivedSpec(class, "derived/attributes", "device.attributes", true)
	},
	// KEP-4816 prioritized lists (dra-1.37-spec.md §2, behaviour 1).
	"9 subrequests": func(class string) resourceapi.ResourceClaimSpec {
		var subs []resourceapi.DeviceSubRequest
		for i := range resourceapi.FirstAvailableDeviceRequestMaxSize + 1 {
			subs = append(subs, SubRequest("sub-"+strconv.Itoa(i), class, 1))
		}
		return FirstAvailableSpec(subs...)
	},
	"two subrequests of the same name": func(class string) resourceapi.ResourceClaimSpec {
		return FirstAvailableSpec(SubRequest("twin", class, 1), SubRequest("twin", class, 2))
	},
	"a subrequest without a deviceClassName": func(string) resourceapi.ResourceClaimSpec {
		return FirstAvailableSpec(SubRequest("classless", "", 1))
	},
	"a subrequest whose name is not a DNS label": func(class string) resourceapi.ResourceClaimSpec {
		return FirstAvailableSpec(SubRequest("Not_A_Label", class, 1))
	},
	"a request with both exactly and firstAvailable": func(class string) resourceapi.ResourceClaimSpec {
		spec := ClaimSpec(class, 1)
		spec.Devices.Requests[0].FirstAvailable = []resourceapi.DeviceSubRequest{SubRequest("alternative", class, 1)}
		return spec
	},
	"config for a subrequest that does not exist": func(class string) resourceapi.ResourceClaimSpec {
		spec := FirstAvailableSpec(SubRequest("present", class, 1))
		spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{RequestName + "/absent"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "drakit.dev", Parameters: runtime.RawExtension{Raw: []byte(`{}`)}}}}}
		return spec
	},
	// KEP-5018 admin access (dra-1.37-spec.md §3, behaviour 1).
	"an adminAccess request": func(class string) resourceapi.ResourceClaimSpec {
		spec := ClaimSpec(class, 1)
		spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
		return spec
	},
	// KEP-5055 tolerations (dra-1.37-spec.md §5, behaviour 3).
	"a toleration with operator Exists and a value": func(class string) resourceapi.ResourceClaimSpec {
		return WithTolerations(ClaimSpec(class, 1), resourceapi.DeviceToleration{Key: "drakit.dev/maintenance", Operator: resourceapi.DeviceTolerationOpExists, Value: "planned"})
	},
	"a toleration with operator Within": func(class string) resourceapi.ResourceClaimSpec {
		return WithTolerations(ClaimSpec(class, 1), resourceapi.DeviceToleration{Key: "drakit.dev/maintenance", Operator: "Within", Value: "planned"})
	},
	"a toleration with effect PreferNoSchedule": func(class string) resourceapi.ResourceClaimSpec {
		return WithTolerations(ClaimSpec(class, 1), resourceapi.DeviceToleration{Key: "drakit.dev/maintenance", Operator: resourceapi.DeviceTolerationOpExists, Effect: "PreferNoSchedule"})
	},
	"a toleration without an operator": func(class string) resourceapi.ResourceClaimSpec {
		return WithTolerations(ClaimSpec(class, 1), resourceapi.DeviceToleration{Key: "drakit.dev/maintenance", Value: "planned"})
	},
}

// withTolerations gives the spec's first request the tolerations.
func WithTolerations(spec resourceapi.ResourceClaimSpec, ts ...resourceapi.DeviceToleration) resourceapi.ResourceClaimSpec {
	spec.Devices.Requests[0].Exactly.Tolerations = ts
	return spec
}

// defectClaim builds the claim a feature names, or says which names exist.
func DefectClaim(name, defect, class string) (*resourceapi.ResourceClaim, error) {
	build, ok := claimDefects[defect]
	if !ok {
		known := make([]string, 0, len(claimDefects))
		for k := range claimDefects {
			known = append(known, strconv.Quote(k))
		}
		sort.Strings(known)
		return nil, fmt.Errorf("unknown claim defect %q; the kit knows %s", defect, strings.Join(known, ", "))
	}
	return NewClaim(name, build(class)), nil
}

// podClaim is one entry of a probe pod's spec.resourceClaims.
type PodClaim struct {
	// name is the entry's name, referenced by the container.
	Name string
	// claim or template: exactly one is set.
	Claim, Template string
}

// probePod is a pod that runs drakit-probe --hold with access to claims,
// on the node under test (Config.NodeName) when the kit names one: a
// required node affinity, so that the scheduler still allocates the
// claims (spec.nodeName would bypass it), which callers that place a pod
// on another node replace. It uses the host network only where the
// cluster needs it (Config.ProbeHostNetwork), and follows the local
// cluster's other rules (local-cluster.md §14, §18.5): explicit API server
// address, restartPolicy Never and a short grace period.
func ProbePod(s *Suite, name string, claims []PodClaim) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: KitMeta(name),
		Spec: corev1.PodSpec{
			HostNetwork:                   s.Cfg.ProbeHostNetwork,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](probeGracePeriodSeconds),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{
				Name:            ProbeContainer,
				Image:           s.Cfg.ProbeImage,
				ImagePullPolicy: s.Cfg.ImagePullPolicy,
				Command:         []string{s.Cfg.ProbeBinary, "--hold"},
				Env: []corev1.EnvVar{
					{Name: "KUBERNETES_SERVICE_HOST", Value: s.apiHost},
					{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(s.apiPort)},
				},
			}},
		},
	}
	if node := s.Cfg.NodeName; node != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: NodeNameSelector(node)}}
	}
	for _, c := range claims {
		pc := corev1.PodResourceClaim{Name: c.Name}
		if c.Claim != "" {
			pc.ResourceClaimName = ptr.To(c.Claim)
		} else {
			pc.ResourceClaimTemplateName = ptr.To(c.Template)
		}
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, pc)
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: c.Name})
	}
	return pod
}

// subRequest is a subrequest for count devices of class.
func SubRequest(name, class string, count int64, selectors ...string) resourceapi.DeviceSubRequest {
	s := resourceapi.DeviceSubRequest{Name: name, DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	for _, e := range selectors {
		s.Selectors = append(s.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return s
}

// firstAvailableSpec is a claim with one request (requestName) that lists
// the subrequests in order.
func FirstAvailableSpec(subs ...resourceapi.DeviceSubRequest) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: RequestName, FirstAvailable: subs,
	}}}}
}

// derivedSpec asks for 2 devices of class with the derived attribute
// name computed by expr, matched by a constraint when constrained.
func DerivedSpec(class, name, expr string, constrained bool) resourceapi.ResourceClaimSpec {
	spec := ClaimSpec(class, 2)
	spec.Devices.Requests[0].Exactly.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{
		Name: resourceapi.FullyQualifiedName(name), Expression: expr,
	}}
	if constrained {
		full := resourceapi.FullyQualifiedName(name)
		spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &full}}
	}
	return spec
}

// DeviceQuotaName is the name of the scenario's ResourceQuota.
const DeviceQuotaName = "devices"

// DeviceQuotaResource is the quota resource that counts the devices claims
// of the namespace request from a DeviceClass.
func DeviceQuotaResource(class string) corev1.ResourceName {
	return corev1.ResourceName(class + ".deviceclass.resource.k8s.io/devices")
}
