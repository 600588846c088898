package podgroups

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// podGroupSteps are KEP-5729's (dra-1.37-spec.md §11): PodGroups
// (scheduling.k8s.io/v1beta1) whose resourceClaims the pods of the group
// share. A pod's claim entry that equals one of its PodGroup's in every
// field uses the group's claim: generated once from the template for the
// group (owned by it), or the named claim, and reserved for the group as a
// whole; the claim lives as long as the group, not as its pods.
func (w *world) podGroupSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the cluster serves PodGroups with resource claims$`, Fn: w.clusterServesPodGroupClaims},
		{Pattern: `^a PodGroup "([^"]+)" with a claim "([^"]+)" from template "([^"]+)"$`, Fn: w.podGroupWithTemplateClaim},
		{Pattern: `^a PodGroup "([^"]+)" that gang-schedules (\d+) pods with a claim "([^"]+)" from template "([^"]+)"$`, Fn: w.gangPodGroupWithTemplateClaim},
		{Pattern: `^a PodGroup "([^"]+)" with the claim "([^"]+)"$`, Fn: w.podGroupWithClaim},
		{Pattern: `^a pod "([^"]+)" of PodGroup "([^"]+)" is created with a claim "([^"]+)" from template "([^"]+)"$`, Fn: w.groupPodWithTemplateClaim},
		{Pattern: `^a pod "([^"]+)" of PodGroup "([^"]+)" is created with the claim "([^"]+)"$`, Fn: w.groupPodWithClaim},
		{Pattern: `^the PodGroup "([^"]+)" has one claim "([^"]+)", generated from its template and owned by it$`, Fn: w.podGroupHasGeneratedClaim},
		{Pattern: `^pods "([^"]+)" and "([^"]+)" use the claim "([^"]+)" of PodGroup "([^"]+)"$`, Fn: w.podsUseGroupClaim},
		{Pattern: `^the claim "([^"]+)" of PodGroup "([^"]+)" is allocated (\d+) devices?$`, Fn: w.groupClaimAllocated},
		{Pattern: `^the claim "([^"]+)"(?: of PodGroup "([^"]+)")? is reserved for the PodGroup "([^"]+)" alone$`, Fn: w.claimReservedForGroup},
		{Pattern: `^the claim "([^"]+)"(?: of PodGroup "([^"]+)")? stays allocated and reserved for the PodGroup "([^"]+)" alone$`, Fn: w.claimStaysReservedForGroup},
		{Pattern: `^the claim "([^"]+)" of pod "([^"]+)" belongs to the pod, not to the PodGroup "([^"]+)"$`, Fn: w.claimBelongsToPod},
		{Pattern: `^the PodGroup "([^"]+)" is deleted$`, Fn: w.deletePodGroup},
		{Pattern: `^the claim "([^"]+)" of PodGroup "([^"]+)" is deleted$`, Fn: w.groupClaimDeleted},
		{Pattern: `^a PodGroup "([^"]+)" with (\d+) claims from template "([^"]+)" is submitted$`, Fn: w.submitPodGroupClaims},
		{Pattern: `^a Workload "([^"]+)" whose PodGroupTemplate has (\d+) claims from template "([^"]+)" is submitted$`, Fn: w.submitWorkloadClaims},
		{Pattern: `^the PodGroup "([^"]+)" is updated with another claim "([^"]+)" from template "([^"]+)"$`, Fn: w.updatePodGroupClaims},
	}
}

// claimStaysFor is how long a "stays" step watches a claim: the
// resourceclaim controller acts on a pod's deletion within milliseconds.
const claimStaysFor = 5 * time.Second

// kindPodGroupUpdate labels updates of a PodGroup's spec.
const kindPodGroupUpdate = "update of PodGroup"

// podGroupRecord is what the kit learned about one of its PodGroups.
type podGroupRecord struct {
	Name string
	UID  types.UID
	// claims are the group's claims a step resolved, by the name of the
	// group's claim entry; kept after the claims are gone.
	claims map[string]kit.ClaimRecord
}

// group returns the record of a PodGroup the scenario created.
func (w *world) group(name string) (*podGroupRecord, error) {
	g, ok := w.groups[name]
	if !ok {
		return nil, fmt.Errorf("PodGroup %s: the scenario did not create it (a step must create it first)", name)
	}
	return g, nil
}

// clusterServesPodGroupClaims skips the scenario when the API server does
// not serve PodGroups or drops their resourceClaims: a dry-run create of a
// PodGroup with a claim shows both. Both are off by default in 1.37.
func (w *world) clusterServesPodGroupClaims(ctx context.Context) (context.Context, error) {
	pg := newPodGroup("gate-check", templateGroupClaim("check", "check"))
	got, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Create(ctx, pg, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case apierrors.IsNotFound(err):
		return kit.Skip(ctx, report.NotEligiblePrefix+"needs API scheduling.k8s.io/v1beta1: the API server does not serve PodGroups (KEP-5729 needs --runtime-config=scheduling.k8s.io/v1beta1=true and the feature gates GenericWorkload and DRAWorkloadResourceClaims, all off by default in 1.37)")
	case err != nil:
		return ctx, fmt.Errorf("dry-run create of a PodGroup with a resource claim: %w", err)
	case len(got.Spec.ResourceClaims) == 0:
		return kit.Skip(ctx, report.NotEligiblePrefix+"needs feature gate DRAWorkloadResourceClaims: the API server drops PodGroup spec.resourceClaims (the gate is off by default in 1.37)")
	}
	return ctx, nil
}

// createPodGroup creates a PodGroup of the scenario and records it.
func (w *world) createPodGroup(ctx context.Context, pg *schedulingapi.PodGroup) error {
	if _, exists := w.groups[pg.Name]; exists {
		return fmt.Errorf("PodGroup %s: the scenario already created a PodGroup with this name", pg.Name)
	}
	got, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create PodGroup %s: %w", pg.Name, err)
	}
	w.Ledger.Add(kit.KindPodGroup, pg.Name)
	w.groups[pg.Name] = &podGroupRecord{Name: got.Name, UID: got.UID, claims: map[string]kit.ClaimRecord{}}
	return nil
}

func (w *world) podGroupWithTemplateClaim(ctx context.Context, group, claim, template string) error {
	return w.createPodGroup(ctx, newPodGroup(group, templateGroupClaim(claim, template)))
}

// gangPodGroupWithTemplateClaim makes a PodGroup whose pods the scheduler
// places all or none (gang scheduling with minCount n).
func (w *world) gangPodGroupWithTemplateClaim(ctx context.Context, group string, n int, claim, template string) error {
	pg := newPodGroup(group, templateGroupClaim(claim, template))
	pg.Spec.SchedulingPolicy = schedulingapi.PodGroupSchedulingPolicy{Gang: &schedulingapi.GangSchedulingPolicy{MinCount: int32(n)}}
	return w.createPodGroup(ctx, pg)
}

func (w *world) podGroupWithClaim(ctx context.Context, group, claim string) error {
	return w.createPodGroup(ctx, newPodGroup(group, schedulingapi.PodGroupResourceClaim{Name: claim, ResourceClaimName: ptr.To(claim)}))
}

// createGroupPod creates a probe pod that joins the PodGroup
// (spec.schedulingGroup.podGroupName).
func (w *world) createGroupPod(ctx context.Context, name, group string, claims []kit.PodClaim) error {
	pod := kit.ProbePod(w.Suite, name, claims)
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return w.CreateProbePod(ctx, pod)
}

func (w *world) groupPodWithTemplateClaim(ctx context.Context, pod, group, claim, template string) error {
	return w.createGroupPod(ctx, pod, group, []kit.PodClaim{{Name: claim, Template: template}})
}

func (w *world) groupPodWithClaim(ctx context.Context, pod, group, claim string) error {
	return w.createGroupPod(ctx, pod, group, []kit.PodClaim{{Name: claim, Claim: claim}})
}

// groupClaimRef resolves the claim behind the PodGroup's claim entry: the
// named claim, or the one generated for the group
// (podgroup.status.resourceClaimStatuses). Once resolved, it is remembered.
func (w *world) groupClaimRef(ctx context.Context, group, entry string) (kit.ClaimRecord, string, error) {
	g, err := w.group(group)
	if err != nil {
		return kit.ClaimRecord{}, "", err
	}
	label := fmt.Sprintf("claim %s of PodGroup %s", entry, group)
	if rec, ok := g.claims[entry]; ok {
		return rec, fmt.Sprintf("%s (%s)", label, rec.Name), nil
	}
	var name string
	err = kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("PodGroup %s to name the ResourceClaim of its claim %s", group, entry), func(ctx context.Context) (bool, string, error) {
		pg, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Get(ctx, group, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		n, found, err := podGroupClaimName(pg, entry)
		name = n
		return found, "not in status.resourceClaimStatuses yet", err
	})
	if err != nil {
		return kit.ClaimRecord{}, "", err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return kit.ClaimRecord{}, "", fmt.Errorf("get %s (%s): %w", label, name, err)
	}
	rec := kit.ClaimRecord{Name: c.Name, UID: c.UID}
	g.claims[entry] = rec
	return rec, fmt.Sprintf("%s (%s)", label, rec.Name), nil
}

// podGroupHasGeneratedClaim checks the claim the resourceclaim controller
// generated for the group's template entry: recorded in the group's status,
// controlled by the group, annotated with the entry's name, and the only
// claim in the namespace that the group owns for that entry.
func (w *world) podGroupHasGeneratedClaim(ctx context.Context, group, entry string) error {
	g, err := w.group(group)
	if err != nil {
		return err
	}
	ref, label, err := w.groupClaimRef(ctx, group, entry)
	if err != nil {
		return err
	}
	claims, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the ResourceClaims of namespace %s: %w", w.Ns, err)
	}
	var bad, forEntry []string
	found := false
	for i := range claims.Items {
		c := &claims.Items[i]
		owner := metav1.GetControllerOf(c)
		ownedByGroup := owner != nil && owner.UID == g.UID
		if c.UID == ref.UID {
			found = true
			bad = append(bad, checkGroupOwnership(label, c, g, entry)...)
			continue
		}
		if ownedByGroup && c.Annotations[resourceapi.PodResourceClaimAnnotation] == entry {
			forEntry = append(forEntry, c.Name)
		}
	}
	if !found {
		bad = append(bad, fmt.Sprintf("%s is gone", label))
	}
	if len(forEntry) > 0 {
		bad = append(bad, fmt.Sprintf("PodGroup %s owns more claims for its entry %s than %s: %s", group, entry, ref.Name, kit.List(forEntry)))
	}
	return kit.Findings(bad)
}

// podsUseGroupClaim checks that both pods' status.resourceClaimStatuses
// name the group's claim for the entry and that the controller generated
// no claim for either pod.
func (w *world) podsUseGroupClaim(ctx context.Context, podA, podB, entry, group string) error {
	ref, label, err := w.groupClaimRef(ctx, group, entry)
	if err != nil {
		return err
	}
	var bad []string
	for _, name := range []string{podA, podB} {
		p, err := w.Pod(name)
		if err != nil {
			return err
		}
		got, err := w.PodClaimName(ctx, name, entry)
		if err != nil {
			return err
		}
		if got != ref.Name {
			bad = append(bad, fmt.Sprintf("pod %s: status.resourceClaimStatuses names %s for its claim %s, expected the %s", name, got, entry, label))
		}
		owned, err := w.claimsControlledBy(ctx, p.UID)
		if err != nil {
			return err
		}
		if len(owned) > 0 {
			bad = append(bad, fmt.Sprintf("pod %s owns claims %s although its claim %s matches the PodGroup's", name, kit.List(owned), entry))
		}
	}
	return kit.Findings(bad)
}

// claimsControlledBy lists the claims in the namespace whose controller
// owner has the UID.
func (w *world) claimsControlledBy(ctx context.Context, uid types.UID) ([]string, error) {
	list, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the ResourceClaims of namespace %s: %w", w.Ns, err)
	}
	var out []string
	for i := range list.Items {
		if owner := metav1.GetControllerOf(&list.Items[i]); owner != nil && owner.UID == uid {
			out = append(out, list.Items[i].Name)
		}
	}
	return out, nil
}

func (w *world) groupClaimAllocated(ctx context.Context, entry, group string, n int) error {
	ref, label, err := w.groupClaimRef(ctx, group, entry)
	if err != nil {
		return err
	}
	return w.CheckClaimAllocated(ctx, ref, label, n)
}

// claimOfGroupOrNamed resolves "the claim X" (a ResourceClaim named X) or
// "the claim X of PodGroup G".
func (w *world) claimOfGroupOrNamed(ctx context.Context, claim, group string) (kit.ClaimRecord, string, error) {
	if group == "" {
		return w.ClaimRef(ctx, claim, "")
	}
	return w.groupClaimRef(ctx, group, claim)
}

func (w *world) claimReservedForGroup(ctx context.Context, claim, ofGroup, group string) error {
	g, err := w.group(group)
	if err != nil {
		return err
	}
	ref, label, err := w.claimOfGroupOrNamed(ctx, claim, ofGroup)
	if err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get %s: %w", label, err)
	}
	return kit.Findings(checkGroupReservation(label, c.Status.ReservedFor, g))
}

// claimStaysReservedForGroup watches the claim for claimStaysFor: it must
// exist, stay allocated and reserved for the PodGroup alone all along.
func (w *world) claimStaysReservedForGroup(ctx context.Context, claim, ofGroup, group string) error {
	g, err := w.group(group)
	if err != nil {
		return err
	}
	ref, label, err := w.claimOfGroupOrNamed(ctx, claim, ofGroup)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(claimStaysFor)
	for {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), err == nil && c.UID != ref.UID:
			return fmt.Errorf("%s was deleted, expected it to stay while PodGroup %s exists", label, group)
		case err != nil:
			return fmt.Errorf("get %s: %w", label, err)
		case c.Status.Allocation == nil:
			return fmt.Errorf("%s was deallocated, expected it to stay allocated while PodGroup %s exists", label, group)
		case c.DeletionTimestamp != nil:
			return fmt.Errorf("%s is being deleted, expected it to stay while PodGroup %s exists", label, group)
		}
		if bad := checkGroupReservation(label, c.Status.ReservedFor, g); len(bad) > 0 {
			return kit.Findings(bad)
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped watching %s: %w", label, ctx.Err())
		case <-time.After(kit.PollInterval):
		}
	}
}

// claimBelongsToPod checks KEP-5729's rule 1 from the other side: a pod's
// claim entry that differs from the PodGroup's in any field gets a claim
// generated for the pod (controlled by it, reserved for it alone), not the
// group's.
func (w *world) claimBelongsToPod(ctx context.Context, entry, pod, group string) error {
	p, err := w.Pod(pod)
	if err != nil {
		return err
	}
	g, err := w.group(group)
	if err != nil {
		return err
	}
	ref, label, err := w.ClaimRef(ctx, entry, pod)
	if err != nil {
		return err
	}
	c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get %s: %w", label, err)
	}
	var bad []string
	owner := metav1.GetControllerOf(c)
	switch {
	case owner == nil:
		bad = append(bad, fmt.Sprintf("%s has no controller owner, expected pod %s", label, pod))
	case owner.Kind != "Pod" || owner.UID != p.UID:
		bad = append(bad, fmt.Sprintf("%s is controlled by %s %s (uid %s), expected pod %s (uid %s)", label, owner.Kind, owner.Name, owner.UID, pod, p.UID))
	}
	if got := c.Annotations[resourceapi.PodResourceClaimAnnotation]; got != entry {
		bad = append(bad, fmt.Sprintf("%s: annotation %s is %q, expected the pod's claim entry %q", label, resourceapi.PodResourceClaimAnnotation, got, entry))
	}
	bad = append(bad, kit.CheckReservedFor(label, c.Status.ReservedFor, map[types.UID]string{p.UID: pod})...)
	for groupEntry, rec := range g.claims {
		if rec.UID == c.UID {
			bad = append(bad, fmt.Sprintf("%s is the claim %s of PodGroup %s", label, groupEntry, group))
		}
	}
	return kit.Findings(bad)
}

// deletePodGroup deletes the PodGroup and waits until it is gone.
func (w *world) deletePodGroup(ctx context.Context, group string) error {
	g, err := w.group(group)
	if err != nil {
		return err
	}
	if err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Delete(ctx, group, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete PodGroup %s: %w", group, err)
	}
	return kit.Poll(ctx, w.Cfg.Timeouts.PodDelete, fmt.Sprintf("PodGroup %s to be gone after deletion", group), func(ctx context.Context) (bool, string, error) {
		pg, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Get(ctx, group, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		return pg.UID != g.UID, fmt.Sprintf("still there (finalizers %v)", pg.Finalizers), nil
	})
}

// groupClaimDeleted waits until the group's claim is gone: the
// resourceclaim controller drops the deleted group's reservation and
// deallocates the claim, and the garbage collector deletes it.
func (w *world) groupClaimDeleted(ctx context.Context, entry, group string) error {
	g, err := w.group(group)
	if err != nil {
		return err
	}
	ref, ok := g.claims[entry]
	if !ok {
		return fmt.Errorf("the claim %s of PodGroup %s was never resolved (a step that names it must come while the PodGroup exists)", entry, group)
	}
	label := fmt.Sprintf("claim %s of PodGroup %s (%s)", entry, group, ref.Name)
	return kit.Poll(ctx, w.Cfg.Timeouts.Cleanup, label+" to be deleted with its PodGroup", func(ctx context.Context) (bool, string, error) {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		if c.UID != ref.UID {
			return true, "", nil
		}
		return false, fmt.Sprintf("still there (allocated %t, reserved for %d, finalizers %v, deleting %t)",
			c.Status.Allocation != nil, len(c.Status.ReservedFor), c.Finalizers, c.DeletionTimestamp != nil), nil
	})
}

func (w *world) submitPodGroupClaims(ctx context.Context, name string, n int, template string) error {
	got, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Create(ctx, newPodGroup(name, templateGroupClaims(n, template)...), metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindPodGroup, name)
		w.groups[name] = &podGroupRecord{Name: got.Name, UID: got.UID, claims: map[string]kit.ClaimRecord{}}
	}
	w.Submitted = &kit.Submission{Kind: kit.KindPodGroup, Name: name, Err: err}
	return nil
}

// submitWorkloadClaims submits a Workload with one PodGroupTemplate that
// has n claims of the template.
func (w *world) submitWorkloadClaims(ctx context.Context, name string, n int, template string) error {
	wl := &schedulingapi.Workload{
		ObjectMeta: kit.KitMeta(name),
		Spec: schedulingapi.WorkloadSpec{PodGroupTemplates: []schedulingapi.PodGroupTemplate{{
			Name:             "workers",
			SchedulingPolicy: schedulingapi.PodGroupSchedulingPolicy{Basic: &schedulingapi.BasicSchedulingPolicy{}},
			ResourceClaims:   templateGroupClaims(n, template),
		}}},
	}
	_, err := w.Kube.SchedulingV1beta1().Workloads(w.Ns).Create(ctx, wl, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindWorkload, name)
	}
	w.Submitted = &kit.Submission{Kind: kit.KindWorkload, Name: name, Err: err}
	return nil
}

// updatePodGroupClaims tries to add a claim entry to an existing PodGroup
// and remembers the API server's answer.
func (w *world) updatePodGroupClaims(ctx context.Context, group, claim, template string) error {
	// The scheduler and the resourceclaim controller write the PodGroup's
	// status meanwhile: a Conflict is a stale read, not the answer to the
	// change, so the change is made again on a fresh read.
	var getErr error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Get(ctx, group, metav1.GetOptions{})
		if err != nil {
			getErr = err
			return nil
		}
		pg.Spec.ResourceClaims = append(pg.Spec.ResourceClaims, templateGroupClaim(claim, template))
		_, err = w.Kube.SchedulingV1beta1().PodGroups(w.Ns).Update(ctx, pg, metav1.UpdateOptions{})
		return err
	})
	if getErr != nil {
		return fmt.Errorf("get PodGroup %s: %w", group, getErr)
	}
	w.Submitted = &kit.Submission{Kind: kindPodGroupUpdate, Name: group, Err: err}
	return nil
}
