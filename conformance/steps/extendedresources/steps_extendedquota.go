package extendedresources

import (
	"context"
	"fmt"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The KEP-5004 steps that look at what counts a pod's extended resources:
// the namespace's ResourceQuota and the nodes' allocatable and capacity
// (extendedResourceSteps lists them).

// extendedResourceQuota creates a ResourceQuota of n for each of the
// class's quota resources (extendedQuotaResources) and waits until the
// quota controller has filled in its status.
func (w *world) extendedResourceQuota(ctx context.Context, n int, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	hard := corev1.ResourceList{}
	for _, r := range extendedQuotaResources(ec) {
		hard[r] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	q := &corev1.ResourceQuota{ObjectMeta: kit.KitMeta(kit.DeviceQuotaName), Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceQuota %s: %w", kit.DeviceQuotaName, err)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, "ResourceQuota "+kit.DeviceQuotaName+" to be counted", func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Get(ctx, kit.DeviceQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for r := range hard {
			if _, ok := got.Status.Hard[r]; !ok {
				return false, "status.hard does not list " + string(r), nil
			}
		}
		return true, "", nil
	})
}

// extendedQuotaUsed waits until the quota counts n of each of the class's
// quota resources as used. The pod charges requests.<resource name>, its
// claim the device count by class; the claim's own share of
// requests.<resource name> is what the pod did not charge already
// (claimEvaluator.addExtendedResourceQuota), so 2n there is a double count.
func (w *world) extendedQuotaUsed(ctx context.Context, n int, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	want := *resource.NewQuantity(int64(n), resource.DecimalSI)
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("ResourceQuota %s to count %d of %s used", kit.DeviceQuotaName, n, ec.resource), func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().ResourceQuotas(w.Ns).Get(ctx, kit.DeviceQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		done := true
		for _, r := range extendedQuotaResources(ec) {
			used, ok := got.Status.Used[r]
			if !ok {
				seen = append(seen, string(r)+" not listed")
				done = false
				continue
			}
			seen = append(seen, string(r)+" "+used.String())
			done = done && used.Cmp(want) == 0
		}
		return done, "status.used: " + strings.Join(seen, ", "), nil
	})
}

// noteNodeResources remembers every node's allocatable and capacity, and
// checks that none lists the class's extended resource by either name: no
// device plugin advertises it, so the scheduler must take it from DRA.
func (w *world) noteNodeResources(ctx context.Context, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	nodes, err := w.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	w.extended.nodes = map[string]nodeResources{}
	var bad []string
	for _, n := range nodes.Items {
		w.extended.nodes[n.Name] = nodeResources{allocatable: n.Status.Allocatable.DeepCopy(), capacity: n.Status.Capacity.DeepCopy()}
		for _, name := range []string{ec.resource, resourceapi.ResourceDeviceClassPrefix + ec.class} {
			for field, l := range map[string]corev1.ResourceList{"allocatable": n.Status.Allocatable, "capacity": n.Status.Capacity} {
				if q, ok := l[corev1.ResourceName(name)]; ok {
					bad = append(bad, fmt.Sprintf("node %s: status.%s lists %s: %s, which no device plugin serves", n.Name, field, name, q.String()))
				}
			}
		}
	}
	return kit.Findings(bad)
}

// nodeResourcesUnchanged checks that the node the pod runs on has the
// allocatable and capacity the kit noted before the pod: devices a pod gets
// through DRA for its extended resources are not node resources, so
// nothing there counts them (or they would count twice).
func (w *world) nodeResourcesUnchanged(ctx context.Context, name string) error {
	if _, err := w.Pod(name); err != nil {
		return err
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not scheduled to a node", name)
	}
	before, ok := w.extended.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("node %s: the kit did not note its resources (a step \"the kit notes every node's allocatable and capacity, ...\" must come first)", pod.Spec.NodeName)
	}
	node, err := w.Kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", pod.Spec.NodeName, err)
	}
	var bad []string
	bad = append(bad, resourceListChanges(node.Name, "allocatable", before.allocatable, node.Status.Allocatable)...)
	bad = append(bad, resourceListChanges(node.Name, "capacity", before.capacity, node.Status.Capacity)...)
	return kit.Findings(bad)
}
