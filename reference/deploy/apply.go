package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/reference/plaindriver"
)

// ErrNotReady is returned when the driver did not become ready in time.
var ErrNotReady = errors.New("driver not ready")

// pollInterval is how often Apply and Delete look at the cluster.
var pollInterval = time.Second

// logTail is how many log lines per container the diagnostics carry.
const logTail = 20

// crud is what create-or-update needs of a typed client.
type crud[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate creates obj or replaces the existing object's content with
// it, keeping the existing resource version.
func createOrUpdate[T metav1.Object](ctx context.Context, c crud[T], obj T, kind string) error {
	existing, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %s: %w", kind, obj.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get %s %s: %w", kind, obj.GetName(), err)
	}
	if existing.GetDeletionTimestamp() != nil {
		return fmt.Errorf("update %s %s: it is being deleted; wait for the deletion to finish", kind, obj.GetName())
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	if _, err := c.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// Apply creates or updates the deployment (the chart rendered for opts)
// and waits until the driver is ready: its DaemonSet rolled out, its pods
// Ready and every node with a Ready pod with a ResourceSlice of the driver
// (one without devices publishes an empty one) — but for the plain
// driver's defect duplicate-device-names, which by design publishes none:
// then it waits for the pods only and deletes the driver's ResourceSlices
// that an earlier, correct run left (the driver's controller, refusing its
// pool, neither updates nor removes them). With a controller, it waits
// until its Deployment has an available replica too. On timeout the error
// carries the pods' diagnostics.
func Apply(ctx context.Context, client kubernetes.Interface, opts Options) error {
	m, err := Objects(opts)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, client, m.List()); err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	publishes := opts.Kind != KindPlain || opts.Defect != plaindriver.DefectDuplicateDeviceNames
	if err := waitReady(ctx, client, workloadOf(&opts), opts.DriverName, opts.Timeout, publishes); err != nil {
		return err
	}
	if !publishes {
		n, err := deleteSlices(ctx, client, opts.DriverName)
		if err != nil {
			return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
		}
		klog.FromContext(ctx).Info("Deleted the ResourceSlices of an earlier run: the driver publishes none with its defect",
			"driver", opts.DriverName, "defect", opts.Defect, "slicesDeleted", n)
	}
	if m.Controller != nil {
		return waitController(ctx, client, m.Controller.Deployment, opts)
	}
	return nil
}

// waitController waits until the controller's Deployment d has an
// available replica.
func waitController(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment, opts Options) error {
	var status string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := ptr.Deref(got.Spec.Replicas, 1)
		status = fmt.Sprintf("%d of %d replicas available", got.Status.AvailableReplicas, want)
		return got.Status.ObservedGeneration >= got.Generation && got.Status.AvailableReplicas >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%w: controller %s of driver %s: %s: %v\n%s", ErrNotReady, d.Name, opts.DriverName, status, err,
			diagnostics(context.WithoutCancel(ctx), client, workload{d.Namespace, d.Name, ""}))
	}
	return nil
}

// workload names a driver's DaemonSet, its namespace and the objects named
// like it (service account, cluster role and binding, admission policy and
// binding); its pods carry AppLabel=name. With node, it is the DaemonSet
// pinned to that node and its pods.
type workload struct{ namespace, name, node string }

// workloadOf is the workload of opts.
func workloadOf(opts *Options) workload { return workload{opts.namespace(), opts.name(), opts.Node} }

// daemonSet is the name of the workload's DaemonSet.
func (w workload) daemonSet() string { return pinnedName(w.name, w.node) }

// podLabels select the workload's pods.
func (w workload) podLabels() labels.Set {
	set := labels.Set{AppLabel: w.name}
	if w.node != "" {
		set[NodeLabel] = w.node
	}
	return set
}

// applyObjects creates or updates objs in order.
func applyObjects(ctx context.Context, client kubernetes.Interface, objs []runtime.Object) error {
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			err = createOrUpdate(ctx, client.CoreV1().Namespaces(), o, "namespace")
		case *corev1.ServiceAccount:
			err = createOrUpdate(ctx, client.CoreV1().ServiceAccounts(o.Namespace), o, "service account")
		case *rbacv1.ClusterRole:
			err = createOrUpdate(ctx, client.RbacV1().ClusterRoles(), o, "cluster role")
		case *rbacv1.ClusterRoleBinding:
			err = createOrUpdate(ctx, client.RbacV1().ClusterRoleBindings(), o, "cluster role binding")
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			err = createOrUpdate(ctx, client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), o, "validating admission policy")
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			err = createOrUpdate(ctx, client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), o,
				"validating admission policy binding")
		case *appsv1.DaemonSet:
			err = createOrUpdate(ctx, client.AppsV1().DaemonSets(o.Namespace), o, "daemon set")
		case *appsv1.Deployment:
			err = createOrUpdate(ctx, client.AppsV1().Deployments(o.Namespace), o, "deployment")
		case *resourceapi.DeviceClass:
			err = createOrUpdate(ctx, client.ResourceV1().DeviceClasses(), o, "device class")
		default:
			err = fmt.Errorf("apply %T: not a kind of the manifests", obj)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until the driver of w is ready (readiness); on timeout
// the error carries the diagnostics of its pods.
func waitReady(ctx context.Context, client kubernetes.Interface, w workload, driverName string, timeout time.Duration, wantSlices bool) error {
	logger := klog.FromContext(ctx)
	logger.V(1).Info("Applied driver manifests, waiting for the driver", "driver", driverName, "timeout", timeout)
	var status string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var (
			done bool
			err  error
		)
		done, status, err = readiness(ctx, client, w, driverName, wantSlices)
		return done, err
	})
	if err != nil {
		if ctx.Err() != nil || !wait.Interrupted(err) {
			return fmt.Errorf("wait for driver %s: %w", driverName, err)
		}
		return fmt.Errorf("%w: driver %s after %s: %s\n%s", ErrNotReady, driverName, timeout, status,
			diagnostics(context.WithoutCancel(ctx), client, w))
	}
	logger.Info("Driver ready", "driver", driverName, "status", status)
	return nil
}

// readiness reports whether the DaemonSet of w is rolled out with every pod
// Ready and, with wantSlices, each of their nodes has a ResourceSlice of
// the driver; status says what is missing (or what is there).
func readiness(ctx context.Context, client kubernetes.Interface, w workload, driverName string, wantSlices bool) (bool, string, error) {
	ds, err := client.AppsV1().DaemonSets(w.namespace).Get(ctx, w.daemonSet(), metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("get daemon set %s/%s: %w", w.namespace, w.daemonSet(), err)
	}
	st := ds.Status
	switch {
	case st.ObservedGeneration < ds.Generation:
		return false, "the daemon set controller has not seen the latest spec yet", nil
	case st.DesiredNumberScheduled == 0:
		return false, "no node runs a driver pod (desired 0)", nil
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled || st.NumberReady < st.DesiredNumberScheduled:
		return false, fmt.Sprintf("driver pods: %d desired, %d updated, %d ready", st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberReady), nil
	}
	pods, err := driverPods(ctx, client, w)
	if err != nil {
		return false, "", err
	}
	var nodes []string
	for _, p := range pods {
		if podReady(&p) && p.DeletionTimestamp == nil {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	if len(nodes) == 0 {
		return false, "no driver pod is Ready", nil
	}
	if !wantSlices {
		return true, fmt.Sprintf("%d driver pod(s) Ready on %s, no ResourceSlices expected", len(nodes), strings.Join(nodes, ", ")), nil
	}
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.driver", driverName).String(),
	})
	if err != nil {
		return false, "", fmt.Errorf("list ResourceSlices of %s: %w", driverName, err)
	}
	published := map[string]bool{}
	for _, s := range slices.Items {
		if s.Spec.Driver == driverName && s.Spec.NodeName != nil {
			published[*s.Spec.NodeName] = true
		}
	}
	var missing []string
	for _, n := range nodes {
		if !published[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("no ResourceSlice of %s for node(s) %s yet", driverName, strings.Join(missing, ", ")), nil
	}
	return true, fmt.Sprintf("%d driver pod(s) Ready, slices published for %s", len(nodes), strings.Join(nodes, ", ")), nil
}

func driverPods(ctx context.Context, client kubernetes.Interface, w workload) ([]corev1.Pod, error) {
	pods, err := client.CoreV1().Pods(w.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(w.podLabels()).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list driver pods: %w", err)
	}
	return pods.Items, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// diagnostics describes each driver pod of w: phase, container states,
// recent events and the last log lines. Errors while collecting become text.
func diagnostics(ctx context.Context, client kubernetes.Interface, w workload) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := driverPods(ctx, client, w)
	if err != nil {
		return err.Error()
	}
	if len(pods) == 0 {
		return fmt.Sprintf("no pods labelled %s in namespace %s", w.podLabels(), w.namespace)
	}
	b := &strings.Builder{}
	events, evErr := client.CoreV1().Events(w.namespace).List(ctx, metav1.ListOptions{})
	for _, p := range pods {
		fmt.Fprintf(b, "pod %s/%s on node %q: phase %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
		if p.Status.Reason != "" || p.Status.Message != "" {
			fmt.Fprintf(b, " (%s: %s)", p.Status.Reason, p.Status.Message)
		}
		b.WriteString("\n")
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(b, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(b, "  container %s: %s, ready=%v, restarts=%d\n", cs.Name, containerState(cs.State), cs.Ready, cs.RestartCount)
			if cs.LastTerminationState.Terminated != nil {
				fmt.Fprintf(b, "    last termination: %s\n", containerState(cs.LastTerminationState))
			}
			writeLogs(ctx, b, client, &p, cs.Name, false)
			if cs.RestartCount > 0 {
				writeLogs(ctx, b, client, &p, cs.Name, true)
			}
		}
		switch {
		case evErr != nil:
			fmt.Fprintf(b, "  events: %v\n", evErr)
		default:
			for _, e := range podEvents(events.Items, &p) {
				fmt.Fprintf(b, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting (%s: %s)", s.Waiting.Reason, s.Waiting.Message)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated with exit code %d (%s: %s)", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	}
	return "state unknown"
}

func writeLogs(ctx context.Context, b *strings.Builder, client kubernetes.Interface, p *corev1.Pod, container string, previous bool) {
	which := "last log lines"
	if previous {
		which = "last log lines of the previous run"
	}
	raw, err := client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
		Container: container, TailLines: ptr.To[int64](logTail), Previous: previous,
	}).DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(b, "    %s: unavailable: %v\n", which, err)
		return
	}
	fmt.Fprintf(b, "    %s:\n", which)
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		fmt.Fprintf(b, "      %s\n", l)
	}
}

// podEvents returns the events about p, oldest first, at most the last 10.
func podEvents(all []corev1.Event, p *corev1.Pod) []corev1.Event {
	var out []corev1.Event
	for _, e := range all {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	if len(out) > 10 {
		out = out[len(out)-10:]
	}
	return out
}

// Delete removes what Apply creates for opts (the chart rendered for
// them; for the GPU driver the IMEX controller too, whether deployed or
// not): the controller first, waiting for its pods to go so that it
// publishes nothing after, then its admission policy and binding; then the
// device classes and the driver's objects, waiting for its pods to go,
// then its admission policy and binding and every ResourceSlice of the
// driver, and waits for its namespace to go. With opts.Node it removes
// only that node's DaemonSet and waits for its pods (the shared objects
// stay for the other nodes'). Deleting what does not exist succeeds. The
// NIC driver's VFs of claims still prepared stay: unprepare removes them.
func Delete(ctx context.Context, client kubernetes.Interface, opts Options) error {
	if opts.Kind == KindGPU && opts.IMEXChannels == 0 {
		opts.IMEXChannels = 1
	}
	m, err := Objects(opts)
	if err != nil {
		return err
	}
	w := workloadOf(&opts)
	if opts.Node != "" {
		return deleteDriver(ctx, client, w, opts.DriverName, nil, opts.Timeout)
	}
	if c := m.Controller; c != nil {
		del := metav1.DeleteOptions{}
		d := c.Deployment
		for what, fn := range map[string]func() error{
			"deployment " + d.Name:           func() error { return client.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, del) },
			"cluster role binding " + d.Name: func() error { return client.RbacV1().ClusterRoleBindings().Delete(ctx, c.ClusterRoleBinding.Name, del) },
			"cluster role " + d.Name:         func() error { return client.RbacV1().ClusterRoles().Delete(ctx, c.ClusterRole.Name, del) },
		} {
			if err := fn(); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s: %w", what, err)
			}
		}
		err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
			pods, err := driverPods(ctx, client, workload{d.Namespace, d.Name, ""})
			return err == nil && len(pods) == 0, err
		})
		if err != nil {
			return fmt.Errorf("wait for the controller pods to go: %w", err)
		}
		if err := deletePolicy(ctx, client, c.Policy.Name); err != nil {
			return err
		}
	}
	var classes []string
	for _, c := range append([]*resourceapi.DeviceClass{m.DeviceClass}, m.Classes...) {
		classes = append(classes, c.Name)
	}
	return deleteDriver(ctx, client, w, opts.DriverName, classes, opts.Timeout)
}

// deleteDriver deletes the device classes, then the objects of w, waits
// for its pods to go, deletes its admission policy and binding and the
// driver's ResourceSlices, and waits for its namespace to go. A workload
// pinned to a node loses only its DaemonSet and pods: the shared objects
// stay for the other nodes' (deleting without a node removes them all).
func deleteDriver(ctx context.Context, client kubernetes.Interface, w workload, driverName string, classes []string, timeout time.Duration) error {
	ignoreNotFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	del := metav1.DeleteOptions{}
	if w.node != "" {
		if err := ignoreNotFound(client.AppsV1().DaemonSets(w.namespace).Delete(ctx, w.daemonSet(), del)); err != nil {
			return fmt.Errorf("delete daemon set %s/%s: %w", w.namespace, w.daemonSet(), err)
		}
		err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			pods, err := driverPods(ctx, client, w)
			return err == nil && len(pods) == 0, err
		})
		if err != nil {
			return fmt.Errorf("wait for the driver pods on node %s to go: %w", w.node, err)
		}
		klog.FromContext(ctx).Info("Driver deleted from node", "driver", driverName, "node", w.node)
		return nil
	}
	type deletion struct {
		what string
		del  func() error
	}
	deleteAll := func(ds []deletion) error {
		for _, d := range ds {
			if err := ignoreNotFound(d.del()); err != nil {
				return fmt.Errorf("delete %s: %w", d.what, err)
			}
		}
		return nil
	}
	var first []deletion
	for _, class := range classes {
		first = append(first, deletion{"device class " + class, func() error {
			return client.ResourceV1().DeviceClasses().Delete(ctx, class, del)
		}})
	}
	first = append(first,
		deletion{"daemon set " + w.namespace + "/" + w.name, func() error { return client.AppsV1().DaemonSets(w.namespace).Delete(ctx, w.name, del) }},
		deletion{"cluster role binding " + w.name, func() error { return client.RbacV1().ClusterRoleBindings().Delete(ctx, w.name, del) }},
		deletion{"cluster role " + w.name, func() error { return client.RbacV1().ClusterRoles().Delete(ctx, w.name, del) }},
		deletion{"namespace " + w.namespace, func() error { return client.CoreV1().Namespaces().Delete(ctx, w.namespace, del) }},
	)
	if err := deleteAll(first); err != nil {
		return err
	}

	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := driverPods(ctx, client, w)
		return err == nil && len(pods) == 0, err
	})
	if err != nil {
		return fmt.Errorf("wait for the driver pods to go: %w", err)
	}
	// The policy goes with the last driver pod.
	if err := deletePolicy(ctx, client, w.name); err != nil {
		return err
	}
	deleted, err := deleteSlices(ctx, client, driverName)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, w.namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %s to go: %w", w.namespace, err)
	}
	klog.FromContext(ctx).Info("Driver deleted", "driver", driverName, "slicesDeleted", deleted)
	return nil
}

// deletePolicy deletes the validating admission policy binding and policy
// named name, where they exist; the caller has seen the pods of the
// service account they limit go.
func deletePolicy(ctx context.Context, client kubernetes.Interface, name string) error {
	policies := client.AdmissionregistrationV1()
	if err := policies.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete validating admission policy binding %s: %w", name, err)
	}
	if err := policies.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete validating admission policy %s: %w", name, err)
	}
	return nil
}

// deleteSlices deletes every ResourceSlice of the driver and returns how
// many it deleted.
func deleteSlices(ctx context.Context, client kubernetes.Interface, driverName string) (int, error) {
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.driver", driverName).String(),
	})
	if err != nil {
		return 0, fmt.Errorf("list ResourceSlices of %s: %w", driverName, err)
	}
	deleted := 0
	for _, s := range slices.Items {
		if s.Spec.Driver != driverName {
			continue
		}
		err := client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete ResourceSlice %s: %w", s.Name, err)
		}
		deleted++
	}
	return deleted, nil
}
