package conformance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// driverSteps act on the driver's own pods (found by the configured
// namespace and label selector), as an operator or a rolling update would.
func (w *world) driverSteps() []stepDef {
	return []stepDef{
		// Restarting the driver disturbs every scenario's devices.
		{`^the driver's pods are restarted$`, w.restartDriverPods, needsExclusive},
		{`^the driver claims the capability "([^"]+)"$`, w.claimsCapability, nil},
	}
}

// restartSkipReason explains why restart scenarios do not apply.
const restartSkipReason = "the kit cannot find the driver's pods: no driver pod selector configured (--driver-pod-selector)"

// restartDriverPods deletes every pod of the driver and waits until as many
// new ones (other UIDs) run with all containers ready. The driver's
// controller (a DaemonSet) must recreate them; the kubelet keeps running
// pods and their prepared claims meanwhile.
func (w *world) restartDriverPods(ctx context.Context) (context.Context, error) {
	if w.cfg.DriverPodSelector == "" {
		return skip(ctx, restartSkipReason)
	}
	pods := w.kube.CoreV1().Pods(w.cfg.DriverNamespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: w.cfg.DriverPodSelector})
	if err != nil {
		return ctx, fmt.Errorf("list the driver's pods (%s): %w", w.cfg.DriverPodSelector, err)
	}
	if len(list.Items) == 0 {
		return ctx, fmt.Errorf("no pod matches the driver pod selector %q in %s", w.cfg.DriverPodSelector, namespaceOrAll(w.cfg.DriverNamespace))
	}
	old := sets.New[types.UID]()
	for _, p := range list.Items {
		old.Insert(p.UID)
		if err := w.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return ctx, fmt.Errorf("delete driver pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	want := len(list.Items)
	return ctx, poll(ctx, w.cfg.Timeouts.PodStart, fmt.Sprintf("%d new driver pods (%s) to be ready", want, w.cfg.DriverPodSelector), func(ctx context.Context) (bool, string, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: w.cfg.DriverPodSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		ready := 0
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			if old.Has(p.UID) {
				seen = append(seen, p.Name+" (old, terminating)")
				continue
			}
			if podReady(p) {
				ready++
			}
			seen = append(seen, fmt.Sprintf("%s (%s)", p.Name, describePod(p)))
		}
		return ready == want, strings.Join(seen, "; "), nil
	})
}

// podReady says whether the pod runs with its Ready condition true.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
