package kit

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestProbeImageProblem(t *testing.T) {
	t.Parallel()
	w := &World{Suite: &Suite{Cfg: referenceDriverConfig()}}
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "no such image"}},
		}}}}
	}
	got := w.ProbeImageProblem(waiting("ErrImageNeverPull"))
	for _, want := range []string{"probe image drakit.dev/probe:dev", "ErrImageNeverPull: no such image", "drakit images import _output/images/probe.tar", "--probe-image"} {
		if !strings.Contains(got, want) {
			t.Errorf("problem %q lacks %q", got, want)
		}
	}
	if got := w.ProbeImageProblem(waiting("ContainerCreating")); got != "" {
		t.Errorf("a pod still being created: %q, want no problem", got)
	}
}

// TestLastWarning: the newest Warning event of the pod, whichever time
// field its source set, with its reason; Normal events and other pods'
// do not count.
func TestLastWarning(t *testing.T) {
	t.Parallel()
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(s), 0)) }
	ev := func(name, pod, typ, reason string, ts metav1.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Name: pod},
			Type: typ, Reason: reason, Message: reason + " message", LastTimestamp: ts}
	}
	kube := fake.NewClientset(
		ev("a", "p", corev1.EventTypeWarning, "FailedScheduling", at(10)),
		ev("b", "p", corev1.EventTypeWarning, "FailedPrepareDynamicResources", at(20)),
		ev("c", "p", corev1.EventTypeNormal, "Scheduled", at(30)),
	)
	w := &World{Suite: &Suite{Kube: kube}, Ns: "ns"}
	if got, want := w.lastWarning(t.Context(), "p"), "FailedPrepareDynamicResources: FailedPrepareDynamicResources message"; got != want {
		t.Errorf("lastWarning = %q, want %q", got, want)
	}
	if got := w.lastWarning(t.Context(), "other"); got != "" {
		t.Errorf("lastWarning of a pod without events = %q, want none", got)
	}
}
