package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
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

// Apply creates or updates the deployment and waits until the driver is
// ready (see the package documentation).
func Apply(ctx context.Context, client kubernetes.Interface, opts Options) error {
	m, err := Objects(opts)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	steps := []func() error{
		func() error { return createOrUpdate(ctx, client.CoreV1().Namespaces(), m.Namespace, "namespace") },
		func() error {
			return createOrUpdate(ctx, client.CoreV1().ServiceAccounts(Namespace), m.ServiceAccount, "service account")
		},
		func() error {
			return createOrUpdate(ctx, client.RbacV1().ClusterRoles(), m.ClusterRole, "cluster role")
		},
		func() error {
			return createOrUpdate(ctx, client.RbacV1().ClusterRoleBindings(), m.ClusterRoleBinding, "cluster role binding")
		},
		func() error {
			return createOrUpdate(ctx, client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), m.Policy,
				"validating admission policy")
		},
		func() error {
			return createOrUpdate(ctx, client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), m.PolicyBinding,
				"validating admission policy binding")
		},
		func() error {
			return createOrUpdate(ctx, client.AppsV1().DaemonSets(Namespace), m.DaemonSet, "daemon set")
		},
		func() error {
			return createOrUpdate(ctx, client.ResourceV1().DeviceClasses(), m.DeviceClass, "device class")
		},
		func() error {
			return createOrUpdate(ctx, client.ResourceV1().DeviceClasses(), m.MIGDeviceClass, "device class")
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
		}
	}
	logger.V(1).Info("Applied driver manifests, waiting for the driver", "driver", opts.DriverName, "timeout", opts.Timeout)

	var status string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		var done bool
		done, status, err = readiness(ctx, client, opts.DriverName)
		return done, err
	})
	if err != nil {
		if ctx.Err() != nil || !wait.Interrupted(err) {
			return fmt.Errorf("wait for driver %s: %w", opts.DriverName, err)
		}
		return fmt.Errorf("%w: driver %s after %s: %s\n%s", ErrNotReady, opts.DriverName, opts.Timeout, status,
			diagnostics(context.WithoutCancel(ctx), client))
	}
	logger.Info("Driver ready", "driver", opts.DriverName, "status", status)
	return nil
}

// readiness reports whether the DaemonSet is rolled out with every pod Ready
// and each of their nodes has a ResourceSlice of the driver; status says
// what is missing (or what is there).
func readiness(ctx context.Context, client kubernetes.Interface, driverName string) (bool, string, error) {
	ds, err := client.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("get daemon set %s/%s: %w", Namespace, Name, err)
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
	pods, err := driverPods(ctx, client)
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

func driverPods(ctx context.Context, client kubernetes.Interface) ([]corev1.Pod, error) {
	pods, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{AppLabel: Name}).String(),
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

// diagnostics describes each driver pod: phase, container states, recent
// events and the last log lines. Errors while collecting become text.
func diagnostics(ctx context.Context, client kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := driverPods(ctx, client)
	if err != nil {
		return err.Error()
	}
	if len(pods) == 0 {
		return fmt.Sprintf("no pods labelled %s=%s in namespace %s", AppLabel, Name, Namespace)
	}
	b := &strings.Builder{}
	events, evErr := client.CoreV1().Events(Namespace).List(ctx, metav1.ListOptions{})
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

// Delete removes the deployment, waits for the driver pods to go, then
// deletes the admission policy and its binding and the driver's
// ResourceSlices, and waits for the namespace to go.
func Delete(ctx context.Context, client kubernetes.Interface, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	ignoreNotFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	del := metav1.DeleteOptions{}
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
	err := deleteAll([]deletion{
		{"device class " + opts.DriverName, func() error {
			return client.ResourceV1().DeviceClasses().Delete(ctx, opts.DriverName, del)
		}},
		{"device class " + MIGDeviceClassName(opts.DriverName), func() error {
			return client.ResourceV1().DeviceClasses().Delete(ctx, MIGDeviceClassName(opts.DriverName), del)
		}},
		{"daemon set " + Namespace + "/" + Name, func() error { return client.AppsV1().DaemonSets(Namespace).Delete(ctx, Name, del) }},
		{"cluster role binding " + Name, func() error { return client.RbacV1().ClusterRoleBindings().Delete(ctx, Name, del) }},
		{"cluster role " + Name, func() error { return client.RbacV1().ClusterRoles().Delete(ctx, Name, del) }},
		{"namespace " + Namespace, func() error { return client.CoreV1().Namespaces().Delete(ctx, Namespace, del) }},
	})
	if err != nil {
		return err
	}

	err = wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := driverPods(ctx, client)
		return err == nil && len(pods) == 0, err
	})
	if err != nil {
		return fmt.Errorf("wait for the driver pods to go: %w", err)
	}
	// The policy goes with the last driver pod.
	err = deleteAll([]deletion{
		{"validating admission policy binding " + Name, func() error {
			return client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, Name, del)
		}},
		{"validating admission policy " + Name, func() error {
			return client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, Name, del)
		}},
	})
	if err != nil {
		return err
	}
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.driver", opts.DriverName).String(),
	})
	if err != nil {
		return fmt.Errorf("list ResourceSlices of %s: %w", opts.DriverName, err)
	}
	deleted := 0
	for _, s := range slices.Items {
		if s.Spec.Driver != opts.DriverName {
			continue
		}
		if err := ignoreNotFound(client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})); err != nil {
			return fmt.Errorf("delete ResourceSlice %s: %w", s.Name, err)
		}
		deleted++
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %s to go: %w", Namespace, err)
	}
	klog.FromContext(ctx).Info("Driver deleted", "driver", opts.DriverName, "slicesDeleted", deleted)
	return nil
}
