package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"drakit.dev/drakit/conformance/kit"
)

// driverSteps act on the driver's own pods (found by the configured
// namespace and label selector), as an operator or a rolling update would.
func (w *world) driverSteps() []kit.StepDef {
	return []kit.StepDef{
		// Restarting the driver disturbs every scenario's devices.
		{Pattern: `^the driver's pods are restarted$`, Fn: w.restartDriverPods, Needs: kit.NeedsExclusive},
		// Stopping the driver disturbs every scenario's devices.
		{Pattern: `^the driver stops on the node$`, Fn: w.stopDriver, Needs: kit.NeedsExclusive},
		{Pattern: `^the driver runs again on the node$`, Fn: w.startDriver},
	}
}

// stoppedNodeSelector is the node selector label the kit adds to the
// driver's DaemonSet to stop it: no node has it.
const stoppedNodeSelector = "drakit.dev/conformance-driver-stopped"

// driverDaemonSet is the DaemonSet that owns the driver's pods.
func (w *world) driverDaemonSet(ctx context.Context) (*appsv1.DaemonSet, error) {
	list, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		return nil, fmt.Errorf("list the driver's pods (%s): %w", w.Driver.DriverPodSelector, err)
	}
	for _, p := range list.Items {
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
				return w.Kube.AppsV1().DaemonSets(p.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			}
		}
	}
	return nil, fmt.Errorf("no pod matching the driver pod selector %q in %s is run by a DaemonSet", w.Driver.DriverPodSelector, kit.NamespaceOrAll(w.Driver.DriverNamespace))
}

// patchDriverNodeSelector sets (value "true") or removes (value nil) the
// stop label in the DaemonSet's node selector.
func (w *world) patchDriverNodeSelector(ctx context.Context, ds *appsv1.DaemonSet, value *string) error {
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%s}}}}}`, stoppedNodeSelector, v)
	_, err := w.Kube.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch the node selector of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

// stopDriver makes the driver's DaemonSet select no node and waits until
// its pods are gone. The scenario's cleanup runs it again, whatever the
// outcome. It needs nothing of the driver but its declared pods
// (driver.pods), run by a DaemonSet as DRA kubelet plugins are; a driver
// the kit cannot stop so is the kit's failure, not the driver's.
func (w *world) stopDriver(ctx context.Context) (context.Context, error) {
	if w.Driver.DriverPodSelector == "" {
		return kit.Skip(ctx, kit.RestartSkipReason)
	}
	ds, err := w.driverDaemonSet(ctx)
	if err != nil {
		return ctx, kit.KitFailure(fmt.Errorf("stop the driver: %w", err))
	}
	st, err := w.beforeStop(ctx)
	if err != nil {
		return ctx, err
	}
	yes := "true"
	st.requested = time.Now()
	if err := w.patchDriverNodeSelector(ctx, ds, &yes); err != nil {
		return ctx, kit.KitFailure(fmt.Errorf("stop the driver: %w", err))
	}
	w.stop = st
	w.Releases = append(w.Releases, func() error { return w.runDriver(context.WithoutCancel(ctx), ds) })
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodDelete, fmt.Sprintf("the driver's pods (%s) to be gone", w.Driver.DriverPodSelector), func(ctx context.Context) (bool, string, error) {
		list, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for i := range list.Items {
			left = append(left, fmt.Sprintf("%s (%s)", list.Items[i].Name, kit.DescribePod(&list.Items[i])))
		}
		return len(left) == 0, strings.Join(left, "; "), nil
	})
	st.gone = time.Now()
	if err != nil {
		// Something outside the driver (an operator that restores its
		// DaemonSet, a finalizer) keeps its pods.
		return ctx, kit.KitFailure(fmt.Errorf("stop the driver: %w", err))
	}
	return ctx, nil
}

// beforeStop records, before the kit stops the driver, the nodes its pods
// run on and its ResourceSlices for them, which the driver must have back
// after it runs again.
func (w *world) beforeStop(ctx context.Context) (*driverStop, error) {
	list, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		return nil, fmt.Errorf("list the driver's pods (%s): %w", w.Driver.DriverPodSelector, err)
	}
	st := &driverStop{}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && !slices.Contains(st.nodes, p.Spec.NodeName) {
			st.nodes = append(st.nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(st.nodes)
	if st.slices, st.devices, err = w.nodeSlices(ctx, st.nodes); err != nil {
		return nil, err
	}
	return st, nil
}

func (w *world) startDriver(ctx context.Context) (context.Context, error) {
	ds, err := w.Kube.AppsV1().DaemonSets(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, fmt.Errorf("list DaemonSets in %s: %w", kit.NamespaceOrAll(w.Driver.DriverNamespace), err)
	}
	for i := range ds.Items {
		if _, stopped := ds.Items[i].Spec.Template.Spec.NodeSelector[stoppedNodeSelector]; stopped {
			return ctx, w.runDriver(ctx, &ds.Items[i])
		}
	}
	return ctx, errors.New("the driver was not stopped: a step \"the driver stops on the node\" must come first")
}

// runDriver removes the stop label, waits until a driver pod is ready and
// then until the driver publishes again, on every node it ran on before the
// stop, at least as many devices as it did then (the kubelet deletes the
// slices of a driver gone for 30 s).
func (w *world) runDriver(ctx context.Context, ds *appsv1.DaemonSet) error {
	if err := w.patchDriverNodeSelector(ctx, ds, nil); err != nil {
		return err
	}
	err := kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("a driver pod (%s) to be ready", w.Driver.DriverPodSelector), func(ctx context.Context) (bool, string, error) {
		list, err := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for i := range list.Items {
			if kit.PodReady(&list.Items[i]) && list.Items[i].DeletionTimestamp == nil {
				return true, "", nil
			}
			seen = append(seen, fmt.Sprintf("%s (%s)", list.Items[i].Name, kit.DescribePod(&list.Items[i])))
		}
		return false, strings.Join(seen, "; "), nil
	})
	if err != nil || w.stop == nil {
		return err
	}
	if w.stop.back.IsZero() {
		w.stop.back = time.Now()
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.Publish, fmt.Sprintf("driver %s to publish its devices for nodes %s again", w.Driver.DriverName, strings.Join(w.stop.nodes, ", ")), func(ctx context.Context) (bool, string, error) {
		_, devices, err := w.nodeSlices(ctx, w.stop.nodes)
		if err != nil {
			return false, err.Error(), nil
		}
		var short []string
		for _, n := range w.stop.nodes {
			if devices[n] < w.stop.devices[n] {
				short = append(short, fmt.Sprintf("node %s: %d of %d devices", n, devices[n], w.stop.devices[n]))
			}
		}
		return len(short) == 0, strings.Join(short, "; "), nil
	})
}

// restartDriverPods deletes every pod of the driver and waits until as many
// new ones (other UIDs) run with all containers ready. The driver's
// controller (a DaemonSet) must recreate them; the kubelet keeps running
// pods and their prepared claims meanwhile.
func (w *world) restartDriverPods(ctx context.Context) (context.Context, error) {
	if w.Driver.DriverPodSelector == "" {
		return kit.Skip(ctx, kit.RestartSkipReason)
	}
	pods := w.Kube.CoreV1().Pods(w.Driver.DriverNamespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
	if err != nil {
		return ctx, fmt.Errorf("list the driver's pods (%s): %w", w.Driver.DriverPodSelector, err)
	}
	if len(list.Items) == 0 {
		return ctx, fmt.Errorf("no pod matches the driver pod selector %q in %s", w.Driver.DriverPodSelector, kit.NamespaceOrAll(w.Driver.DriverNamespace))
	}
	old := sets.New[types.UID]()
	for _, p := range list.Items {
		old.Insert(p.UID)
		if err := w.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return ctx, fmt.Errorf("delete driver pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	want := len(list.Items)
	return ctx, kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("%d new driver pods (%s) to be ready", want, w.Driver.DriverPodSelector), func(ctx context.Context) (bool, string, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: w.Driver.DriverPodSelector})
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
			if kit.PodReady(p) {
				ready++
			}
			seen = append(seen, fmt.Sprintf("%s (%s)", p.Name, kit.DescribePod(p)))
		}
		return ready == want, strings.Join(seen, "; "), nil
	})
}
