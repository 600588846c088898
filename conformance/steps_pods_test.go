package conformance

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestProbeImageProblem(t *testing.T) {
	t.Parallel()
	w := &world{suite: &suite{cfg: referenceDriverConfig()}}
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "no such image"}},
		}}}}
	}
	got := w.probeImageProblem(waiting("ErrImageNeverPull"))
	for _, want := range []string{"probe image drakit.dev/probe:dev", "ErrImageNeverPull: no such image", "drakit images import _output/images/probe.tar", "--probe-image"} {
		if !strings.Contains(got, want) {
			t.Errorf("problem %q lacks %q", got, want)
		}
	}
	if got := w.probeImageProblem(waiting("ContainerCreating")); got != "" {
		t.Errorf("a pod still being created: %q, want no problem", got)
	}
}
