package faults

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"drakit.dev/drakit/conformance/kit"
)

// evictionSteps judge what the device-taint-eviction controller of
// kube-controller-manager does to pods whose devices have a NoExecute taint
// (KEP-5055): it marks them DisruptionTarget and deletes them, at once or
// once their toleration expires, and leaves the others alone.
func (w *world) evictionSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^pod "([^"]+)" keeps running for (\d+) seconds$`, Fn: w.podKeepsRunning},
		{Pattern: `^pod "([^"]+)" is evicted by the device taint manager$`, Fn: w.podEvicted},
		{Pattern: `^pod "([^"]+)" is evicted by the device taint manager (\d+) seconds after DeviceTaintRule "([^"]+)" tainted its device$`, Fn: w.podEvictedAfter},
	}
}

// The device taint manager's words on the pods it evicts (pkg/controller/
// devicetainteviction).
const (
	evictionReason  = "DeletionByDeviceTaintManager"
	evictionMessage = "Device Taint manager: deleting due to NoExecute taint"
)

// evictionSlack is how late after its toleration ends the kit accepts an
// eviction: the controller deletes the pod at the taint's timeAdded plus
// tolerationSeconds from a delayed work queue; the slack covers a busy
// controller-manager and the whole seconds of the stored timestamps.
const evictionSlack = 5 * time.Second

// secondSlack covers timestamps stored in whole seconds.
const secondSlack = time.Second

const timeFormat = time.RFC3339

// podKeepsRunning watches the pod for the given time: it must stay running,
// neither deleted nor marked as a disruption target.
func (w *world) podKeepsRunning(ctx context.Context, name string, seconds int) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("pod %s: expected it to keep running for %d s: %w", name, seconds, err)
		}
		if problem := notRunning(pod, p.UID); problem != "" {
			return fmt.Errorf("pod %s: expected it to keep running for %d s, but %s", name, seconds, problem)
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(kit.PollInterval):
		}
	}
}

// notRunning says why the pod is not the running pod the scenario created;
// "" when it is.
func notRunning(pod *corev1.Pod, uid types.UID) string {
	switch {
	case pod.UID != uid:
		return "it was replaced by another pod of that name"
	case pod.DeletionTimestamp != nil:
		return fmt.Sprintf("it is being deleted (%s)", kit.DescribePod(pod))
	case pod.Status.Phase != corev1.PodRunning:
		return kit.DescribePod(pod)
	}
	if c := podCondition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return fmt.Sprintf("it is a disruption target (%s: %s)", c.Reason, c.Message)
	}
	return ""
}

// eviction is what the kit saw of a pod's eviction.
type eviction struct {
	// condition is the DisruptionTarget condition the pod got; nil when
	// it got none before it was gone.
	condition *corev1.PodCondition
	// deleted says the pod is gone.
	deleted bool
	// seen is when the kit saw the condition (its own clock).
	seen time.Time
}

// watchEviction follows the pod from the resource version the scenario's
// pods had when it last created a DeviceTaintRule until the pod is gone:
// the condition may be on the pod for a moment only before it is deleted.
func (w *world) watchEviction(ctx context.Context, name string, timeout time.Duration) (eviction, error) {
	var ev eviction
	p, err := w.Pod(name)
	if err != nil {
		return ev, err
	}
	if w.taint.podsRV == "" {
		return ev, fmt.Errorf("pod %s: nothing tainted its device (a step \"a DeviceTaintRule ... taints device ...\" or one that breaks the GPU under it must come first)", name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rv := w.taint.podsRV
	last := "no change since its device was tainted"
	for {
		wi, err := w.Kube.CoreV1().Pods(w.Ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return ev, fmt.Errorf("timed out after %v waiting for pod %s to be evicted; last seen: %s", timeout, name, last)
			}
			return ev, fmt.Errorf("watch pod %s: %w", name, err)
		}
		for e := range wi.ResultChan() {
			if e.Type == watch.Error {
				wi.Stop()
				return ev, fmt.Errorf("watch pod %s from resource version %s: %v", name, rv, e.Object)
			}
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || pod.UID != p.UID {
				continue
			}
			rv = pod.ResourceVersion
			last = kit.DescribePod(pod)
			if c := podCondition(pod, corev1.DisruptionTarget); c != nil && ev.condition == nil {
				ev.condition, ev.seen = c.DeepCopy(), time.Now()
			}
			if e.Type == watch.Deleted {
				ev.deleted = true
				wi.Stop()
				return ev, nil
			}
		}
		wi.Stop()
		if ctx.Err() != nil {
			return ev, fmt.Errorf("timed out after %v waiting for pod %s to be evicted; last seen: %s", timeout, name, last)
		}
	}
}

// checkEviction judges an eviction by the device taint manager: the pod was
// marked DisruptionTarget=True with its reason and message, then deleted.
func checkEviction(pod string, ev eviction) []string {
	var bad []string
	switch c := ev.condition; {
	case c == nil:
		bad = append(bad, fmt.Sprintf("pod %s was deleted without a DisruptionTarget condition; the device taint manager sets DisruptionTarget=True, reason %s, before it deletes a pod", pod, evictionReason))
	case c.Status != corev1.ConditionTrue || c.Reason != evictionReason:
		bad = append(bad, fmt.Sprintf("pod %s: condition DisruptionTarget=%s with reason %q (%s), expected True with reason %s", pod, c.Status, c.Reason, c.Message, evictionReason))
	case c.Message != evictionMessage:
		bad = append(bad, fmt.Sprintf("pod %s: condition DisruptionTarget has message %q, expected %q", pod, c.Message, evictionMessage))
	}
	if !ev.deleted {
		bad = append(bad, fmt.Sprintf("pod %s was not deleted", pod))
	}
	return bad
}

func (w *world) podEvicted(ctx context.Context, name string) error {
	ev, err := w.watchEviction(ctx, name, w.Cfg.Timeouts.PodDelete+w.Cfg.Timeouts.PodStart)
	if err != nil {
		return err
	}
	return kit.Findings(checkEviction(name, ev))
}

// podEvictedAfter checks the eviction of a pod whose claim tolerates the
// rule's NoExecute taint for the given seconds: the controller evicts it at
// the taint's timeAdded plus those seconds, not before and not much later.
// Both times are the control plane's: the rule's timeAdded (set by the API
// server) and the pod condition's lastTransitionTime (set by the controller).
func (w *world) podEvictedAfter(ctx context.Context, name string, seconds int, alias string) (context.Context, error) {
	r, err := w.rule(ctx, alias)
	if err != nil {
		return ctx, err
	}
	if r.Spec.Taint.TimeAdded == nil {
		return ctx, fmt.Errorf("DeviceTaintRule %s: the API server stored its taint without timeAdded", r.Name)
	}
	tolerated := time.Duration(seconds) * time.Second
	ev, err := w.watchEviction(ctx, name, tolerated+w.Cfg.Timeouts.PodDelete+w.Cfg.Timeouts.PodStart)
	if err != nil {
		return ctx, err
	}
	bad := checkEviction(name, ev)
	if c := ev.condition; c != nil {
		added := r.Spec.Taint.TimeAdded.Time
		bad = append(bad, checkEvictionTime(name, added, tolerated, c.LastTransitionTime.Time)...)
		ctx = godog.Attach(ctx, godog.Attachment{FileName: "eviction", MediaType: "text/plain", Body: []byte(fmt.Sprintf(
			"pod %s: DisruptionTarget at %s, %v after the taint's timeAdded %s (tolerated %v)",
			name, c.LastTransitionTime.UTC().Format(timeFormat), c.LastTransitionTime.Sub(added), added.UTC().Format(timeFormat), tolerated))})
	}
	return ctx, kit.Findings(bad)
}

// checkEvictionTime compares when a pod was marked for eviction with when
// its toleration of a taint added at added ended.
func checkEvictionTime(pod string, added time.Time, tolerated time.Duration, evicted time.Time) []string {
	due := added.Add(tolerated)
	switch {
	case evicted.Before(due):
		return []string{fmt.Sprintf("pod %s was evicted at %s, %v after the taint was added (%s), before its toleration of %v ended",
			pod, evicted.UTC().Format(timeFormat), evicted.Sub(added), added.UTC().Format(timeFormat), tolerated)}
	case evicted.After(due.Add(evictionSlack)):
		return []string{fmt.Sprintf("pod %s was evicted at %s, %v after the taint was added (%s): more than %v after its toleration of %v ended",
			pod, evicted.UTC().Format(timeFormat), evicted.Sub(added), added.UTC().Format(timeFormat), evictionSlack, tolerated)}
	}
	return nil
}

// knownKeys lists a map's keys, quoted and sorted, for errors.
func knownKeys[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, strconv.Quote(k))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
