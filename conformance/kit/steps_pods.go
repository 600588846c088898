package kit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// podSteps create probe pods, wait for them and delete them.
func (w *World) podSteps() []StepDef {
	return []StepDef{
		{Pattern: `^a pod "([^"]+)" is created with a claim "([^"]+)" from template "([^"]+)"$`, Fn: w.podWithTemplateClaim},
		{Pattern: `^a pod "([^"]+)" is created with the claim "([^"]+)"$`, Fn: w.podWithClaim},
		{Pattern: `^a pod "([^"]+)" is created with the claims "([^"]+)" and "([^"]+)"$`, Fn: w.podWithClaims},
		{Pattern: `^pod "([^"]+)" is running$`, Fn: w.PodIsRunning},
		{Pattern: `^pod "([^"]+)" stays pending as unschedulable$`, Fn: w.podUnschedulable},
		{Pattern: `^pod "([^"]+)" is deleted$`, Fn: w.DeletePod},
	}
}

func (w *World) CreatePod(ctx context.Context, name string, claims []PodClaim) error {
	return w.CreateProbePod(ctx, ProbePod(w.Suite, name, claims))
}

// createProbePod creates a probe pod (probePod, possibly changed by the
// caller) and records it.
func (w *World) CreateProbePod(ctx context.Context, pod *corev1.Pod) error {
	name := pod.Name
	if _, exists := w.Pods[name]; exists {
		return fmt.Errorf("pod %s: the scenario already created a pod with this name", name)
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	w.Ledger.Add(KindPod, name)
	w.Pods[name] = &PodRecord{Name: name, UID: pod.UID}
	klog.FromContext(ctx).V(2).Info("Created probe pod", "pod", name, "uid", pod.UID)
	return nil
}

func (w *World) podWithTemplateClaim(ctx context.Context, pod, claim, template string) error {
	return w.CreatePod(ctx, pod, []PodClaim{{Name: claim, Template: template}})
}

func (w *World) podWithClaim(ctx context.Context, pod, claim string) error {
	return w.CreatePod(ctx, pod, []PodClaim{{Name: claim, Claim: claim}})
}

func (w *World) podWithClaims(ctx context.Context, pod, first, second string) error {
	return w.CreatePod(ctx, pod, []PodClaim{{Name: first, Claim: first}, {Name: second, Claim: second}})
}

// podIsRunning waits for the pod to run, reads its probe report and
// resolves its claims and their allocated devices, which later steps
// compare with the report.
func (w *World) PodIsRunning(ctx context.Context, name string) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	err = Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to run", name), func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		pod = got
		switch got.Status.Phase {
		case corev1.PodRunning:
			return true, "", nil
		case corev1.PodSucceeded, corev1.PodFailed:
			return false, "", fmt.Errorf("pod %s ended before the kit could inspect it: %s; log tail: %s",
				name, DescribePod(got), w.LogTail(ctx, name))
		}
		if problem := w.ProbeImageProblem(got); problem != "" {
			return false, "", fmt.Errorf("pod %s cannot start: %s", name, problem)
		}
		return false, DescribePod(got), nil
	})
	if err != nil {
		if warning := w.lastWarning(ctx, name); warning != "" {
			return fmt.Errorf("%w; its last warning event: %s", err, warning)
		}
		return err
	}
	report, err := w.ReadContainerReport(ctx, name, ProbeContainer)
	if err != nil {
		return err
	}
	p.Report = &report
	return w.resolvePodClaims(ctx, p, pod)
}

// readContainerReport polls the log of a probe container of the pod until
// the probe's report line shows up.
func (w *World) ReadContainerReport(ctx context.Context, name, container string) (probe.Report, error) {
	var report probe.Report
	err := Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("the probe report in the log of container %s of pod %s", container, name), func(ctx context.Context) (bool, string, error) {
		data, err := w.podLogs(ctx, w.Ns, name, &corev1.PodLogOptions{Container: container})
		if err != nil {
			return false, "read log: " + err.Error(), nil
		}
		r, err := probe.ParseLogs(string(data))
		if errors.Is(err, probe.ErrNoReport) {
			return false, fmt.Sprintf("no report yet (%d bytes of log)", len(data)), nil
		}
		if err != nil {
			return false, "", fmt.Errorf("pod %s: %w", name, err)
		}
		report = r
		return true, "", nil
	})
	return report, err
}

// resolvePodClaims records the pod's claims and the driver's devices
// allocated to them, joined with their ResourceSlice entries: the claims of
// its claim entries and the claim the scheduler created for its extended
// resources (KEP-5004), under the entry extendedClaimEntry.
func (w *World) resolvePodClaims(ctx context.Context, p *PodRecord, pod *corev1.Pod) error {
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return err
	}
	p.Claims = map[string]ClaimRecord{}
	p.Devices = nil
	var bad []string
	resolve := func(entry, claimName string) error {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("pod %s: get its claim %s (%s): %w", p.Name, entry, claimName, err)
		}
		p.Claims[entry] = ClaimRecord{Name: c.Name, UID: c.UID}
		if c.Status.Allocation == nil {
			bad = append(bad, fmt.Sprintf("pod %s runs, but its claim %s (%s) is not allocated", p.Name, entry, claimName))
			return nil
		}
		for _, r := range DriverResults(c, w.Driver.DriverName) {
			d, ok := FindDevice(devices, r.Pool, r.Device)
			if !ok {
				bad = append(bad, fmt.Sprintf("pod %s: claim %s is allocated device %s/%s, which is in no ResourceSlice of driver %s", p.Name, claimName, r.Pool, r.Device, w.Driver.DriverName))
				continue
			}
			ad := observe.Device{Claim: claimName, Request: r.Request, Pool: r.Pool, Device: r.Device, Attributes: d.Attributes, Capacity: d.Capacity}
			if a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, w.Driver.UUIDAttribute); ok && a.StringValue != nil {
				ad.UUID = *a.StringValue
			}
			p.Devices = append(p.Devices, ad)
		}
		return nil
	}
	for _, pc := range pod.Spec.ResourceClaims {
		claimName, err := w.PodClaimName(ctx, p.Name, pc.Name)
		if err != nil {
			return err
		}
		if err := resolve(pc.Name, claimName); err != nil {
			return err
		}
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil && st.ResourceClaimName != "" {
		if err := resolve(ExtendedClaimEntry, st.ResourceClaimName); err != nil {
			return err
		}
	}
	return Findings(bad)
}

// podClaimName is the ResourceClaim behind a pod's claim entry: the named
// claim, or the one generated from a template (pod.status.resourceClaimStatuses).
func (w *World) PodClaimName(ctx context.Context, pod, entry string) (string, error) {
	got, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get pod %s: %w", pod, err)
	}
	for _, pc := range got.Spec.ResourceClaims {
		if pc.Name == entry && pc.ResourceClaimName != nil {
			return *pc.ResourceClaimName, nil
		}
	}
	for _, st := range got.Status.ResourceClaimStatuses {
		if st.Name == entry {
			if st.ResourceClaimName == nil {
				return "", fmt.Errorf("pod %s: claim entry %s needs no ResourceClaim according to pod.status.resourceClaimStatuses", pod, entry)
			}
			return *st.ResourceClaimName, nil
		}
	}
	return "", fmt.Errorf("pod %s: claim entry %s has no ResourceClaim yet (not in pod.status.resourceClaimStatuses)", pod, entry)
}

// podUnschedulable waits for the scheduler to mark the pod unschedulable
// and fails at once if the pod gets bound to a node instead; the reference
// allocator must then find no allocation of its claims either (the oracle).
func (w *World) podUnschedulable(ctx context.Context, name string) (context.Context, error) {
	if err := w.WaitUnschedulable(ctx, name); err != nil {
		return ctx, err
	}
	return w.ProveUnschedulable(ctx, name)
}

func (w *World) WaitUnschedulable(ctx context.Context, name string) error {
	return Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to be marked PodScheduled=False with reason Unschedulable", name), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod %s was scheduled to node %s, expected it to stay pending as unschedulable (%s)", name, pod.Spec.NodeName, DescribePod(pod))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, "", nil
			}
		}
		return false, DescribePod(pod), nil
	})
}

func (w *World) DeletePod(ctx context.Context, name string) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	if err := w.Kube.CoreV1().Pods(w.Ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return Poll(ctx, w.Cfg.Timeouts.PodDelete, fmt.Sprintf("pod %s to be gone after deletion", name), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.UID != p.UID {
			return true, "", nil
		}
		return false, DescribePod(pod), nil
	})
}

// describePod summarizes a pod's state for messages: phase, conditions that
// are not true, and container states.
func DescribePod(pod *corev1.Pod) string {
	parts := []string{"phase " + string(pod.Status.Phase)}
	if pod.Spec.NodeName != "" {
		parts = append(parts, "node "+pod.Spec.NodeName)
	}
	for _, c := range pod.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			continue
		}
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" || c.Message != "" {
			s += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
		}
		parts = append(parts, s)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			parts = append(parts, fmt.Sprintf("container %s terminated: exit code %d, %s %s", cs.Name, t.ExitCode, t.Reason, t.Message))
		}
	}
	return strings.Join(parts, ", ")
}

// logTail is the end of the probe container's log, for error messages.
func (w *World) LogTail(ctx context.Context, name string) string {
	lines := int64(20)
	data, err := w.podLogs(ctx, w.Ns, name, &corev1.PodLogOptions{Container: ProbeContainer, TailLines: &lines})
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	if len(data) == 0 {
		return "(empty)"
	}
	return strings.TrimSpace(string(data))
}

// imageReasons are the container waiting reasons that say the node cannot
// get the image: no wait makes the pod start.
var imageReasons = map[string]bool{"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true}

// probeImageProblem says why the node cannot run the probe image, with the
// fix; "" when nothing says so.
func (w *World) ProbeImageProblem(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting == nil || !imageReasons[cs.State.Waiting.Reason] {
			continue
		}
		return fmt.Sprintf("the node cannot get the probe image %s (%s: %s). Import it into the node's container runtime "+
			"(drakit's local cluster: make cluster-up imports _output/images, or drakit images import _output/images/probe.tar), "+
			"or give an image the node can pull with --probe-image and --image-pull-policy IfNotPresent",
			w.Cfg.ProbeImage, cs.State.Waiting.Reason, cs.State.Waiting.Message)
	}
	return ""
}

// lastWarning is the pod's newest Warning event, "<reason>: <message>" (the
// kubelet's FailedPrepareDynamicResources carries the driver's error), or
// "" when it has none or the kit cannot read them.
func (w *World) lastWarning(ctx context.Context, pod string) string {
	list, err := w.Kube.CoreV1().Events(w.Ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",type=" + corev1.EventTypeWarning})
	if err != nil {
		return ""
	}
	// The field selector is the API server's; checked again for clients
	// that do not apply it.
	warnings := slices.DeleteFunc(list.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name != pod || e.Type != corev1.EventTypeWarning
	})
	if len(warnings) == 0 {
		return ""
	}
	last := slices.MaxFunc(warnings, func(a, b corev1.Event) int { return eventTime(a).Time.Compare(eventTime(b).Time) })
	return last.Reason + ": " + last.Message
}

// extendedClaimEntry is the key of a pod's claim for its extended resources
// among podRecord.claims: the scheduler's own name for it before it exists,
// which no claim entry of a pod spec can have (it is no DNS label).
const ExtendedClaimEntry = "<extended-resources>"

// PodReady says whether the pod runs with its Ready condition true.
func PodReady(p *corev1.Pod) bool {
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
