package extendedresources

import (
	"context"
	"fmt"
	"slices"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// extendedResourceSteps are KEP-5004's (dra-1.37-spec.md §8): a DeviceClass
// the kit creates over the driver's devices names an extended resource, and
// a pod that asks for it in resources.limits, as it would ask for a device
// plugin's resource, gets the driver's devices through a ResourceClaim the
// scheduler creates for it.
func (w *world) extendedResourceSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a DeviceClass "([^"]+)" for the driver's devices with an extended resource name$`, Fn: w.extendedClassExplicit},
		{Pattern: `^a DeviceClass "([^"]+)" for the driver's devices without an extended resource name$`, Fn: w.extendedClassImplicit},
		{Pattern: `^a DeviceClass is submitted with extendedResourceName "([^"]*)"$`, Fn: w.submitExtendedResourceName},
		{Pattern: `^a pod "([^"]+)" is created asking for (\d+) of the extended resource of DeviceClass "([^"]+)"$`, Fn: w.extendedPodHolding, Needs: kit.NeedsWhole(true, 1)},
		{Pattern: `^a pod "([^"]+)" that exits after its report is created asking for (\d+) of the extended resource of DeviceClass "([^"]+)"$`, Fn: w.extendedPodExiting, Needs: kit.NeedsWhole(true, 1)},
		{Pattern: `^a pod "([^"]+)" is created asking for 1 more of the extended resource of DeviceClass "([^"]+)" than one node has$`, Fn: w.extendedPodTooMany},
		{Pattern: `^a pod "([^"]+)" asking for (\d+) of the extended resource of DeviceClass "([^"]+)" is submitted$`, Fn: w.submitExtendedPod},
		{Pattern: `^pod "([^"]+)" completes$`, Fn: w.podCompletes},
		{Pattern: `^the scheduler created one claim for the extended resources of pod "([^"]+)", allocated (\d+) devices?$`, Fn: w.extendedClaimCreated},
		{Pattern: `^pod "([^"]+)" sees exactly the (\d+) devices? allocated for its extended resources$`, Fn: w.podSeesExtendedDevices},
		{Pattern: `^the claim for the extended resources of pod "([^"]+)" is deleted$`, Fn: w.extendedClaimDeleted},
		{Pattern: `^pod "([^"]+)" stays pending as unschedulable without a claim for its extended resources$`, Fn: w.extendedPodUnschedulable},
		{Pattern: `^the scenario's namespace has a ResourceQuota of (\d+) of the extended resource of DeviceClass "([^"]+)"$`, Fn: w.extendedResourceQuota},
		{Pattern: `^the ResourceQuota counts (\d+) of the extended resource of DeviceClass "([^"]+)" as used, the pod's and its claim's requests once$`, Fn: w.extendedQuotaUsed},
		{Pattern: `^the kit notes every node's allocatable and capacity, which list no extended resource of DeviceClass "([^"]+)"$`, Fn: w.noteNodeResources},
		{Pattern: `^the allocatable and capacity of the node of pod "([^"]+)" are as the kit noted them$`, Fn: w.nodeResourcesUnchanged},
	}
}

// extendedResourceDomain is the domain of the extended resource names the
// kit's DeviceClasses declare.
const extendedResourceDomain = "conformance.drakit.dev"

// extendedState is what the KEP-5004 steps remember: the scenario's
// DeviceClasses by alias, and the nodes' resources as noted.
type extendedState struct {
	classes map[string]extendedClass
	nodes   map[string]nodeResources
}

// extendedClass is a DeviceClass the scenario created and the extended
// resource name that pods use to ask for its devices: its
// extendedResourceName, or the implicit deviceclass.resource.kubernetes.io/<class>.
type extendedClass struct {
	class, resource string
}

// nodeResources are a node's status.allocatable and status.capacity.
type nodeResources struct {
	allocatable, capacity corev1.ResourceList
}

func (w *world) extendedClassExplicit(ctx context.Context, alias string) error {
	return w.createExtendedClass(ctx, alias, true)
}

func (w *world) extendedClassImplicit(ctx context.Context, alias string) error {
	return w.createExtendedClass(ctx, alias, false)
}

// createExtendedClass creates a DeviceClass with the selectors and config of
// the driver's DeviceClass, kept to the scenario's leased devices; with
// explicit, it names the extended resource <extendedResourceDomain>/<class
// name>. Both the class name and the resource are the scenario's alone
// (named after its namespace), so that concurrent scenarios' pods never ask
// for each other's classes.
func (w *world) createExtendedClass(ctx context.Context, alias string, explicit bool) error {
	if _, ok := w.extended.classes[alias]; ok {
		return fmt.Errorf("DeviceClass %q: the scenario already created it", alias)
	}
	driverClass, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, w.Driver.DeviceClass(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get the driver's DeviceClass %s: %w", w.Driver.DeviceClass(), err)
	}
	name := w.TestObjectName(alias)
	class := &resourceapi.DeviceClass{ObjectMeta: kit.KitMeta(name), Spec: resourceapi.DeviceClassSpec{
		Selectors: slices.Clone(driverClass.Spec.Selectors),
		Config:    slices.Clone(driverClass.Spec.Config),
	}}
	if e := w.LeaseSelector(w.Driver.DeviceClass()); e != "" {
		class.Spec.Selectors = append(class.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	ec := extendedClass{class: name, resource: resourceapi.ResourceDeviceClassPrefix + name}
	if explicit {
		ec.resource = extendedResourceDomain + "/" + name
		class.Spec.ExtendedResourceName = ptr.To(ec.resource)
	}
	created, err := w.Kube.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create DeviceClass %s: %w", name, err)
	}
	w.Ledger.Add(kit.KindDeviceClass, name)
	if explicit && ptr.Deref(created.Spec.ExtendedResourceName, "") != ec.resource {
		return fmt.Errorf("DeviceClass %s: created with extendedResourceName %q, the API server stored %q", name, ec.resource, ptr.Deref(created.Spec.ExtendedResourceName, "<none>"))
	}
	if w.extended.classes == nil {
		w.extended.classes = map[string]extendedClass{}
	}
	w.extended.classes[alias] = ec
	return nil
}

// extendedClassOf returns a DeviceClass the scenario created.
func (w *world) extendedClassOf(alias string) (extendedClass, error) {
	ec, ok := w.extended.classes[alias]
	if !ok {
		return extendedClass{}, fmt.Errorf("DeviceClass %q: the scenario did not create it (a step \"a DeviceClass %q for the driver's devices ...\" must come first)", alias, alias)
	}
	return ec, nil
}

// submitExtendedResourceName tries to create a DeviceClass that names the
// extended resource and remembers the API server's answer.
func (w *world) submitExtendedResourceName(ctx context.Context, name string) error {
	className := w.TestObjectName("extended-resource-name")
	class := &resourceapi.DeviceClass{ObjectMeta: kit.KitMeta(className), Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(name)}}
	_, err := w.Kube.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindDeviceClass, className)
	}
	w.Submitted = &kit.Submission{Kind: kit.KindDeviceClass, Name: className, Err: err}
	return nil
}

// extendedPod is a probe pod whose container asks for n of the class's
// extended resource in resources.limits (the API server defaults the
// requests to them); with hold false the probe exits after its report.
func (w *world) extendedPod(name string, ec extendedClass, n int, hold bool) *corev1.Pod {
	pod := kit.ProbePod(w.Suite, name, nil)
	c := &pod.Spec.Containers[0]
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceName(ec.resource): *resource.NewQuantity(int64(n), resource.DecimalSI)}
	if !hold {
		c.Command = []string{w.Cfg.ProbeBinary}
	}
	return pod
}

func (w *world) extendedPodHolding(ctx context.Context, name string, n int, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	return w.CreateProbePod(ctx, w.extendedPod(name, ec, n, true))
}

func (w *world) extendedPodExiting(ctx context.Context, name string, n int, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	return w.CreateProbePod(ctx, w.extendedPod(name, ec, n, false))
}

// extendedPodTooMany asks for one device more than the class selects on
// the best-equipped node; as claimTooMany, it skips where that is more than
// a claim can hold.
func (w *world) extendedPodTooMany(ctx context.Context, name, alias string) (context.Context, error) {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return ctx, err
	}
	devices, err := w.ClassDevices(ctx, ec.class)
	if err != nil {
		return ctx, err
	}
	n := kit.MaxDevicesOnOneNode(devices) + 1
	if n > resourceapi.AllocationResultsMaxSize {
		return kit.Skip(ctx, fmt.Sprintf("a node has %d devices of DeviceClass %s: a claim can hold at most %d (AllocationResultsMaxSize), so no pod can ask for more than a node has",
			n-1, ec.class, resourceapi.AllocationResultsMaxSize))
	}
	return ctx, w.CreateProbePod(ctx, w.extendedPod(name, ec, n, true))
}

// submitExtendedPod tries to create the pod and remembers the answer; a
// pod the API server accepts is the scenario's like any other.
func (w *world) submitExtendedPod(ctx context.Context, name string, n int, alias string) error {
	ec, err := w.extendedClassOf(alias)
	if err != nil {
		return err
	}
	err = w.CreateProbePod(ctx, w.extendedPod(name, ec, n, true))
	w.Submitted = &kit.Submission{Kind: kit.KindPod, Name: name, Err: err}
	return nil
}

// podCompletes waits for the pod to succeed and remembers the claim that
// pod.status.extendedResourceClaimStatus names.
func (w *world) podCompletes(ctx context.Context, name string) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to succeed", name), func(ctx context.Context) (bool, string, error) {
		got, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		pod = got
		switch got.Status.Phase {
		case corev1.PodSucceeded:
			return true, "", nil
		case corev1.PodFailed:
			return false, "", fmt.Errorf("pod %s failed: %s; log tail: %s", name, kit.DescribePod(got), w.LogTail(ctx, name))
		}
		if problem := w.ProbeImageProblem(got); problem != "" {
			return false, "", fmt.Errorf("pod %s cannot start: %s", name, problem)
		}
		return false, kit.DescribePod(got), nil
	})
	if err != nil {
		return err
	}
	return w.rememberExtendedClaim(ctx, p, pod)
}

// rememberExtendedClaim records the claim the pod's status names for its
// extended resources.
func (w *world) rememberExtendedClaim(ctx context.Context, p *kit.PodRecord, pod *corev1.Pod) error {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == "" {
		return fmt.Errorf("pod %s: pod.status.extendedResourceClaimStatus names no claim: the scheduler must name the claim it created for the pod's extended resources", p.Name)
	}
	if p.Claims == nil {
		p.Claims = map[string]kit.ClaimRecord{}
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, st.ResourceClaimName, metav1.GetOptions{})
	switch {
	case err == nil:
		p.Claims[kit.ExtendedClaimEntry] = kit.ClaimRecord{Name: c.Name, UID: c.UID}
	case apierrors.IsNotFound(err):
		// Already deleted: the steps that follow look for it by name.
		p.Claims[kit.ExtendedClaimEntry] = kit.ClaimRecord{Name: st.ResourceClaimName}
	default:
		return fmt.Errorf("pod %s: get its claim %s: %w", p.Name, st.ResourceClaimName, err)
	}
	return nil
}

// extendedClaimsOf are the claims of the namespace that the scheduler
// created for the pod's extended resources: those with the annotation
// resource.kubernetes.io/extended-resource-claim "true" that the pod
// controls, as the scheduler finds them (findExtendedResourceClaim).
func (w *world) extendedClaimsOf(ctx context.Context, pod *corev1.Pod) ([]resourceapi.ResourceClaim, error) {
	list, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the ResourceClaims of namespace %s: %w", w.Ns, err)
	}
	var out []resourceapi.ResourceClaim
	for _, c := range list.Items {
		if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(&c); ref != nil && ref.UID == pod.UID {
			out = append(out, c)
		}
	}
	return out, nil
}

// extendedClaimCreated checks the claim the scheduler created for the
// pod's extended resources (kube-scheduler v1.37.2,
// dynamicresources/extendeddynamicresources.go): the only one the pod
// controls with the annotation, generateName <pod>-extended-resources-, a
// controller ownerReference to the pod, one ExactCount request per
// container and resource named container-<i>-request-<j> for the
// resource's DeviceClass, reserved for the pod; pod.status.extendedResourceClaimStatus
// names it and maps each container's resource to its request. Then it
// checks the allocation as for any claim: n devices of the driver, all
// published, judged by the reference allocator.
func (w *world) extendedClaimCreated(ctx context.Context, name string, n int) error {
	if _, err := w.Pod(name); err != nil {
		return err
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	owned, err := w.extendedClaimsOf(ctx, pod)
	if err != nil {
		return err
	}
	if len(owned) != 1 {
		names := make([]string, 0, len(owned))
		for _, c := range owned {
			names = append(names, c.Name)
		}
		return fmt.Errorf("pod %s: expected one claim with annotation %s: \"true\" that the pod controls, found %d: %s",
			name, resourceapi.ExtendedResourceClaimAnnotation, len(owned), kit.List(names))
	}
	c := &owned[0]
	classes := map[corev1.ResourceName]string{}
	for _, ec := range w.extended.classes {
		classes[corev1.ResourceName(ec.resource)] = ec.class
	}
	bad := checkExtendedClaim(pod, c, classes)
	if len(bad) > 0 {
		return kit.Findings(bad)
	}
	return w.CheckClaimAllocated(ctx, kit.ClaimRecord{Name: c.Name, UID: c.UID}, fmt.Sprintf("the claim %s for the extended resources of pod %s", c.Name, name), n)
}

// podSeesExtendedDevices is podSeesAllocatedDevices for a pod whose
// devices come from the claim for its extended resources, which must hold
// n devices of the driver, all of them prepared.
func (w *world) podSeesExtendedDevices(ctx context.Context, name string, n int) (context.Context, error) {
	ctx, err := w.PodSeesAllocatedDevices(ctx, name)
	if err != nil {
		return ctx, err
	}
	p := w.Pods[name]
	rec, ok := p.Claims[kit.ExtendedClaimEntry]
	if !ok {
		return ctx, fmt.Errorf("pod %s: pod.status.extendedResourceClaimStatus named no claim when the pod ran", name)
	}
	var ids []string
	for _, d := range p.Devices {
		if d.Claim == rec.Name {
			ids = append(ids, d.Pool+"/"+d.Device)
		}
	}
	var bad []string
	if len(ids) != n {
		bad = append(bad, fmt.Sprintf("pod %s: its claim %s for its extended resources holds %d devices of driver %s (%s), expected %d", name, rec.Name, len(ids), w.Driver.DriverName, kit.List(ids), n))
	}
	switch {
	case p.Seen.NodeChecked && len(p.Seen.Prepared) != n:
		bad = append(bad, fmt.Sprintf("pod %s: the driver prepared %d devices for it (%s), expected %d", name, len(p.Seen.Prepared), kit.List(p.Seen.Prepared), n))
	case !p.Seen.NodeChecked && len(p.Seen.Shown) != n:
		bad = append(bad, fmt.Sprintf("pod %s: its container shows %d devices of driver %s (%s), expected %d", name, len(p.Seen.Shown), w.Driver.DriverName, kit.List(p.Seen.Shown), n))
	}
	return ctx, kit.Findings(bad)
}

// extendedClaimDeleted waits until the claim the pod's status named for
// its extended resources is gone: the garbage collector deletes it with a
// deleted pod, the resourceclaim controller once the pod is done.
func (w *world) extendedClaimDeleted(ctx context.Context, name string) error {
	p, err := w.Pod(name)
	if err != nil {
		return err
	}
	rec, ok := p.Claims[kit.ExtendedClaimEntry]
	if !ok {
		return fmt.Errorf("pod %s: the kit did not learn the claim for its extended resources (a step \"pod %q is running\" or \"pod %q completes\" must come first)", name, name, name)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, fmt.Sprintf("claim %s for the extended resources of pod %s to be deleted", rec.Name, name), func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, rec.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		if rec.UID != "" && c.UID != rec.UID {
			return true, "", nil
		}
		state := "unallocated"
		if c.Status.Allocation != nil {
			state = "allocated"
		}
		return false, fmt.Sprintf("still there, %s, reserved for %d, deleting %t", state, len(c.Status.ReservedFor), c.DeletionTimestamp != nil), nil
	})
}

// extendedPodUnschedulable waits for the scheduler to mark the pod
// unschedulable, and checks that it left no claim behind and named none in
// the pod's status, and that the pod does ask for more devices than any
// node has free in the classes it asks of (the DeviceClass selectors keep
// them to the scenario's lease, so no other scenario takes them meanwhile).
func (w *world) extendedPodUnschedulable(ctx context.Context, name string) error {
	if _, err := w.Pod(name); err != nil {
		return err
	}
	if err := w.WaitUnschedulable(ctx, name); err != nil {
		return err
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", name, err)
	}
	var bad []string
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		bad = append(bad, fmt.Sprintf("pod %s is unschedulable, but pod.status.extendedResourceClaimStatus names claim %q", name, st.ResourceClaimName))
	}
	owned, err := w.extendedClaimsOf(ctx, pod)
	if err != nil {
		return err
	}
	for _, c := range owned {
		bad = append(bad, fmt.Sprintf("pod %s is unschedulable, but the scheduler left claim %s for its extended resources", name, c.Name))
	}
	taken, err := w.allocatedDevices(ctx)
	if err != nil {
		return err
	}
	for _, ec := range w.extended.classes {
		asked := int64(0)
		for _, c := range pod.Spec.Containers {
			if q, ok := c.Resources.Limits[corev1.ResourceName(ec.resource)]; ok {
				asked += q.Value()
			}
		}
		if asked == 0 {
			continue
		}
		devices, err := w.ClassDevices(ctx, ec.class)
		if err != nil {
			return err
		}
		var free []kit.PublishedDevice
		for _, d := range devices {
			if !taken[d.Pool+"/"+d.Name] || d.MultipleAllocations {
				free = append(free, d)
			}
		}
		if most := kit.MaxDevicesOnOneNode(free); int64(most) >= asked {
			bad = append(bad, fmt.Sprintf("pod %s asks for %d of %s, and a node has %d free devices of DeviceClass %s: the scheduler should have scheduled it", name, asked, ec.resource, most, ec.class))
		}
	}
	return kit.Findings(bad)
}

// allocatedDevices are the driver's devices (pool/device) that claims of
// any namespace are allocated.
func (w *world) allocatedDevices(ctx context.Context) (map[string]bool, error) {
	claims, err := w.Kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ResourceClaims: %w", err)
	}
	taken := map[string]bool{}
	for i := range claims.Items {
		for _, r := range kit.DriverResults(&claims.Items[i], w.Driver.DriverName) {
			taken[r.Pool+"/"+r.Device] = true
		}
	}
	return taken, nil
}
