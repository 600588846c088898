package faults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The kubelet names a container's entries after the pod's claim entry, not
// the ResourceClaim object: claimHealthNames finds the entry of a claim.
func TestHealthOf(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: "gpu", ResourceClaimName: ptr.To("ailing")},
			{Name: "other", ResourceClaimName: ptr.To("sound")},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "probe",
			AllocatedResourcesStatus: []corev1.ResourceStatus{
				{Name: "claim:gpu", Resources: []corev1.ResourceHealth{{ResourceID: "k8s.gpu.drakit.dev/gpu=uid-gpu-0", Health: corev1.ResourceHealthStatusUnhealthy, Message: ptr.To("Xid 48")}}},
				{Name: "claim:gpu/req-1", Resources: []corev1.ResourceHealth{{ResourceID: "k8s.gpu.drakit.dev/gpu=uid-gpu-1", Health: corev1.ResourceHealthStatusHealthy}}},
				{Name: "claim:other", Resources: []corev1.ResourceHealth{{ResourceID: "k8s.gpu.drakit.dev/gpu=uid-gpu-2", Health: corev1.ResourceHealthStatusHealthy}}},
				{Name: "claim:gpux", Resources: []corev1.ResourceHealth{{ResourceID: "x", Health: corev1.ResourceHealthStatusHealthy}}},
			},
		}}},
	}
	got := healthOf(pod, "ailing")
	if len(got) != 2 || countResourceIDs(got) != 2 {
		t.Fatalf("health of ailing: %v, want the two entries of claim entry gpu", got)
	}
	if r := got["probe claim:gpu k8s.gpu.drakit.dev/gpu=uid-gpu-0"]; r.Health != corev1.ResourceHealthStatusUnhealthy || ptr.Deref(r.Message, "") != "Xid 48" {
		t.Errorf("entry claim:gpu = %+v", r)
	}
	if got := healthOf(pod, "missing"); len(got) != 0 {
		t.Errorf("health of a claim the pod does not use: %v", got)
	}
}
