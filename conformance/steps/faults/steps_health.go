package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
)

// healthSteps read the health of allocated devices where the kubelet puts
// what the driver streams (KEP-4680): the pod's
// status.containerStatuses[].allocatedResourcesStatus.
func (w *world) healthSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^within (\d+) seconds pod "([^"]+)" shows the devices of the claim "([^"]+)" as (Healthy|Unhealthy|Unknown)$`, Fn: w.podShowsHealth},
	}
}

// claimHealthNames are the allocatedResourcesStatus names the kubelet gives
// the pod's entries for a ResourceClaim object: "claim:<entry>" or
// "claim:<entry>/<request>", <entry> being the pod's spec.resourceClaims
// name that refers to it.
func claimHealthNames(pod *corev1.Pod, claim string) []string {
	var entries []string
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil && *rc.ResourceClaimName == claim {
			entries = append(entries, rc.Name)
		}
	}
	for i, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil && *st.ResourceClaimName == claim {
			entries = append(entries, pod.Status.ResourceClaimStatuses[i].Name)
		}
	}
	return entries
}

// healthOf collects the health entries of the claim's devices over all of
// the pod's containers, keyed "<container> <name> <resourceID>".
func healthOf(pod *corev1.Pod, claim string) map[string]corev1.ResourceHealth {
	entries := claimHealthNames(pod, claim)
	out := map[string]corev1.ResourceHealth{}
	for _, cs := range pod.Status.ContainerStatuses {
		for _, rs := range cs.AllocatedResourcesStatus {
			name := string(rs.Name)
			for _, e := range entries {
				if name != "claim:"+e && !strings.HasPrefix(name, "claim:"+e+"/") {
					continue
				}
				for _, r := range rs.Resources {
					out[fmt.Sprintf("%s %s %s", cs.Name, name, r.ResourceID)] = r
				}
			}
		}
	}
	return out
}

// podShowsHealth waits until every allocatedResourcesStatus entry of the
// claim in the pod shows want, and there is one for each of the driver's
// devices allocated to the claim. An Unhealthy entry must carry a message
// when the driver claims deviceHealthMessages. When a fault was injected
// in the scenario, the time from the injection is attached.
func (w *world) podShowsHealth(ctx context.Context, seconds int, podName, claim, want string) (context.Context, error) {
	if _, err := w.Pod(podName); err != nil {
		return ctx, err
	}
	_, results, err := w.AllocatedClaim(ctx, claim)
	if err != nil {
		return ctx, err
	}
	messages := w.Driver.Claims(declaration.CapabilityDeviceHealthMessages)
	var last string
	err = kit.Poll(ctx, time.Duration(seconds)*time.Second, fmt.Sprintf("pod %s to show the %d devices of claim %s as %s", podName, len(results), claim, want), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		health := healthOf(pod, claim)
		var seen []string
		ok := len(health) > 0
		for key, r := range health {
			msg := ptr.Deref(r.Message, "")
			seen = append(seen, fmt.Sprintf("%s: %s %q", key, r.Health, msg))
			if string(r.Health) != want || (want == string(corev1.ResourceHealthStatusUnhealthy) && messages && msg == "") {
				ok = false
			}
		}
		last = strings.Join(seen, "\n")
		if len(health) == 0 {
			return false, "no allocatedResourcesStatus entry for the claim in any container", nil
		}
		// One entry per device: the kubelet lists each device's CDI ID
		// (or driver/pool/device) once per claim entry and container.
		if n := countResourceIDs(health); n < len(results) {
			return false, fmt.Sprintf("%d devices listed, %d allocated: %s", n, len(results), last), nil
		}
		return ok, last, nil
	})
	ctx = kit.AttachText(ctx, "allocatedResourcesStatus", last)
	if err == nil {
		ctx = w.attachSinceFault(ctx, "health "+want)
	}
	return ctx, err
}

// countResourceIDs is the number of distinct resource IDs in health.
func countResourceIDs(health map[string]corev1.ResourceHealth) int {
	ids := map[corev1.ResourceID]bool{}
	for _, r := range health {
		ids[r.ResourceID] = true
	}
	return len(ids)
}
