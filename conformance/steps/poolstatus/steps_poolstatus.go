package poolstatus

import (
	"context"
	"fmt"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	resourcealpha "k8s.io/api/resource/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// poolStatusSteps ask the resourcepoolstatusrequest controller of
// kube-controller-manager (KEP-5677, dra-1.37-spec.md §14) about pools and
// compare its answer with what the kit computes from the ResourceSlices,
// ResourceClaims and DeviceTaintRules the API server stored (poolstatus.go).
// Requests are cluster-scoped: they carry the scenario's namespace in their
// name and the ledger deletes them.
func (w *world) poolStatusSteps() []kit.StepDef {
	return append([]kit.StepDef{
		{Pattern: `^the API server serves ResourcePoolStatusRequests$`, Fn: w.servesPoolStatus},
		{Pattern: `^a ResourcePoolStatusRequest "([^"]+)" for the driver with limit (-?\d+) is submitted$`, Fn: w.submitPoolStatusLimit},
		{Pattern: `^a ResourcePoolStatusRequest "([^"]+)" for the driver without a limit is created$`, Fn: w.createPoolStatusDefault},
		{Pattern: `^the request "([^"]+)" stores limit (\d+)$`, Fn: w.poolStatusStoresLimit},
		{Pattern: `^the request "([^"]+)" completes with condition Complete, reason CalculationComplete$`, Fn: w.poolStatusCompletes},
		{Pattern: `^the limit of the request "([^"]+)" is changed to (\d+)$`, Fn: w.changePoolStatusLimit},
		{Pattern: `^the status of the request "([^"]+)" is rewritten with poolCount (\d+)$`, Fn: w.rewritePoolStatus},
		{Pattern: `^a ResourcePoolStatusRequest for the driver reports every pool of the driver as the stored objects say$`, Fn: w.poolStatusOfDriver},
		{Pattern: `^a ResourcePoolStatusRequest for the driver reports a partition summary for its pools that name a partition type attribute, as the stored objects say$`, Fn: w.poolStatusPartitionsOfDriver},
		{Pattern: `^a ResourcePoolStatusRequest for driver "([^"]+)" reports no pools$`, Fn: w.poolStatusNoPools},
		{Pattern: `^a ResourcePoolStatusRequest for the pool of the claim "([^"]+)" reports only that pool, (with|without) the claim's device allocated, as the stored objects say$`, Fn: w.poolStatusOfClaim},
		{Pattern: `^a ResourcePoolStatusRequest for the test driver with limit (\d+) lists the first (\d+) of the stored pools in order and counts them all$`, Fn: w.poolStatusTruncated},
		{Pattern: `^a ResourcePoolStatusRequest for the test driver's pool "([^"]+)" reports only that pool, on (?:node "([^"]+)"|(no) node)$`, Fn: w.poolStatusOnNode},
		{Pattern: `^a ResourcePoolStatusRequest for the test driver's pool "([^"]+)"( with the default partition type attribute)? reports partition types "([^"]*)"$`, Fn: w.poolStatusPartitions},
		{Pattern: `^a ResourcePoolStatusRequest for the test driver's pool "([^"]+)" reports (\d+) fully and (\d+) partially available shareable devices? with capacity "([^"]+)" of (\S+) in total$`, Fn: w.poolStatusShareable},
		{Pattern: `^a ResourcePoolStatusRequest for the test driver's pool "([^"]+)" reports no shareable summary$`, Fn: w.poolStatusNoShareable},
		{Pattern: `^a ResourcePoolStatusRequest "([^"]+)" for the test driver's pool "([^"]+)" is created$`, Fn: w.createPoolStatusForTestPool},
		{Pattern: `^the request "([^"]+)" stays without status for (\d+) seconds$`, Fn: w.poolStatusStaysPending},
		{Pattern: `^the request "([^"]+)" is labelled, which queues it again$`, Fn: w.labelPoolStatus},
		{Pattern: `^the request "([^"]+)" reports only pool "([^"]+)" at generation (\d+) with (\d+) slices and (\d+) devices, as the stored objects say$`, Fn: w.poolStatusAfterRollout},
	}, w.poolStatusPoolSteps()...)
}

// Timing of requests: the controller answers within a second; a request
// whose pools include one mid-rollout gets no status at all (1.37.2 drops
// it after five quick retries), so the kit asks again, up to
// poolStatusAttempts times, also when the stored objects changed while the
// controller computed.
const (
	poolStatusWait     = 15 * time.Second
	poolStatusAttempts = 6
)

// poolStatusState is what the KEP-5677 steps remember: the requests'
// names by alias and the claims' devices once read.
type poolStatusState struct {
	requests map[string]string
	devices  map[string][]resourceapi.DeviceRequestAllocationResult
	seq      int
}

func (w *world) servesPoolStatus(ctx context.Context) (context.Context, error) {
	res, err := w.Kube.Discovery().ServerResourcesForGroupVersion(resourcealpha.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return ctx, fmt.Errorf("discover %s: %w", resourcealpha.SchemeGroupVersion, err)
	}
	if res != nil {
		for _, r := range res.APIResources {
			if r.Name == "resourcepoolstatusrequests" {
				return ctx, nil
			}
		}
	}
	return kit.Skip(ctx, report.NotEligiblePrefix+"needs feature gate DRAResourcePoolStatus, API resource.k8s.io/v1alpha3: "+
		"the API server does not serve resourcepoolstatusrequests (runtime-config resource.k8s.io/v1alpha3=true)")
}

func (w *world) poolStatusRequestName(alias string) string {
	return w.TestObjectName("pool-status-" + alias)
}

// createPoolStatus creates a request and records it in the ledger.
func (w *world) createPoolStatus(ctx context.Context, alias string, spec resourcealpha.ResourcePoolStatusRequestSpec) (*resourcealpha.ResourcePoolStatusRequest, error) {
	req := &resourcealpha.ResourcePoolStatusRequest{ObjectMeta: kit.KitMeta(w.poolStatusRequestName(alias)), Spec: spec}
	got, err := w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().Create(ctx, req, metav1.CreateOptions{})
	if err == nil {
		w.Ledger.Add(kit.KindPoolStatusRequest, req.Name)
		if w.poolStatus.requests == nil {
			w.poolStatus.requests = map[string]string{}
		}
		w.poolStatus.requests[alias] = req.Name
	}
	w.Submitted = &kit.Submission{Kind: kit.KindPoolStatusRequest, Name: req.Name, Err: err}
	if err != nil {
		return nil, fmt.Errorf("create ResourcePoolStatusRequest %s: %w", req.Name, err)
	}
	return got, nil
}

func (w *world) poolStatusRequest(ctx context.Context, alias string) (*resourcealpha.ResourcePoolStatusRequest, error) {
	name, ok := w.poolStatus.requests[alias]
	if !ok {
		return nil, fmt.Errorf("ResourcePoolStatusRequest %q: the scenario did not create it", alias)
	}
	r, err := w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get ResourcePoolStatusRequest %s: %w", name, err)
	}
	return r, nil
}

func (w *world) submitPoolStatusLimit(ctx context.Context, alias string, limit int) error {
	_, _ = w.createPoolStatus(ctx, alias, resourcealpha.ResourcePoolStatusRequestSpec{Driver: w.Driver.DriverName, Limit: ptr.To(int32(limit))})
	return nil // the outcome is judged by the next step
}

func (w *world) createPoolStatusDefault(ctx context.Context, alias string) error {
	_, err := w.createPoolStatus(ctx, alias, resourcealpha.ResourcePoolStatusRequestSpec{Driver: w.Driver.DriverName})
	return err
}

func (w *world) poolStatusStoresLimit(ctx context.Context, alias string, limit int) error {
	r, err := w.poolStatusRequest(ctx, alias)
	if err != nil {
		return err
	}
	if r.Spec.Limit == nil || int(*r.Spec.Limit) != limit {
		return fmt.Errorf("ResourcePoolStatusRequest %s stores limit %s, expected the default %d", r.Name, intString(r.Spec.Limit), limit)
	}
	return nil
}

// waitPoolStatus waits up to timeout for the controller to set the
// request's status; nil without an error when it did not.
func (w *world) waitPoolStatus(ctx context.Context, name string, timeout time.Duration) (*resourcealpha.ResourcePoolStatusRequest, error) {
	var got *resourcealpha.ResourcePoolStatusRequest
	err := kit.Poll(ctx, timeout, "ResourcePoolStatusRequest "+name+" to get a status", func(ctx context.Context) (bool, string, error) {
		r, err := w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		got = r
		return r.Status != nil, "no status yet", nil
	})
	if got != nil && got.Status != nil {
		return got, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	return nil, nil
}

// completeCondition checks the status's conditions: Complete=True with
// reason CalculationComplete.
func completeCondition(r *resourcealpha.ResourcePoolStatusRequest) error {
	c := meta.FindStatusCondition(r.Status.Conditions, resourcealpha.ResourcePoolStatusRequestConditionComplete)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "CalculationComplete" {
		return fmt.Errorf("ResourcePoolStatusRequest %s: expected condition Complete=True with reason CalculationComplete, got %s", r.Name, describeConditions(r.Status.Conditions))
	}
	return nil
}

func describeConditions(cs []metav1.Condition) string {
	if len(cs) == 0 {
		return "no conditions"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s=%s (reason %s: %q)", c.Type, c.Status, c.Reason, c.Message)
	}
	return strings.Join(parts, ", ")
}

func (w *world) poolStatusCompletes(ctx context.Context, alias string) error {
	name, ok := w.poolStatus.requests[alias]
	if !ok {
		return fmt.Errorf("ResourcePoolStatusRequest %q: the scenario did not create it", alias)
	}
	r, err := w.waitPoolStatus(ctx, name, poolStatusWait)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("ResourcePoolStatusRequest %s got no status within %v: is the resourcepoolstatusrequest controller of kube-controller-manager on (feature gate DRAResourcePoolStatus)?", name, poolStatusWait)
	}
	return completeCondition(r)
}

// changePoolStatusLimit tries to change the spec of a request; the outcome
// is judged by the rejection steps.
func (w *world) changePoolStatusLimit(ctx context.Context, alias string, limit int) error {
	r, err := w.poolStatusRequest(ctx, alias)
	if err != nil {
		return err
	}
	r.Spec.Limit = ptr.To(int32(limit))
	_, err = w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().Update(ctx, r, metav1.UpdateOptions{})
	w.Submitted = &kit.Submission{Kind: kit.KindPoolStatusRequest + " update of", Name: r.Name, Err: err}
	return nil
}

// rewritePoolStatus tries to overwrite the status the controller set.
func (w *world) rewritePoolStatus(ctx context.Context, alias string, count int) error {
	r, err := w.poolStatusRequest(ctx, alias)
	if err != nil {
		return err
	}
	if r.Status == nil {
		return fmt.Errorf("ResourcePoolStatusRequest %s has no status to rewrite", r.Name)
	}
	r.Status.PoolCount = ptr.To(int32(count))
	_, err = w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().UpdateStatus(ctx, r, metav1.UpdateOptions{})
	w.Submitted = &kit.Submission{Kind: kit.KindPoolStatusRequest + " status update of", Name: r.Name, Err: err}
	return nil
}

// snapshotPools reads what a request about driver depends on.
func (w *world) snapshotPools(ctx context.Context, driver string) (poolSnapshot, error) {
	var s poolSnapshot
	slices, err := w.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, driver).String(),
	})
	if err != nil {
		return s, fmt.Errorf("list ResourceSlices of driver %s: %w", driver, err)
	}
	claims, err := w.Kube.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list ResourceClaims: %w", err)
	}
	rules, err := w.Kube.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return s, fmt.Errorf("list DeviceTaintRules: %w", err)
	}
	s.Slices, s.Claims = slices.Items, claims.Items
	if rules != nil {
		s.Rules = rules.Items
	}
	return s, nil
}

func describeExpected(pools []expectedPool) string {
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// answered is a request the controller answered while the stored objects
// stayed the same, and the kit's pools for it.
type answered struct {
	req  *resourcealpha.ResourcePoolStatusRequest
	want []expectedPool
}

// askPoolStatus creates requests for spec until the controller answers one
// while the stored objects it depends on are the same before and after,
// and returns it with the kit's pools; it fails with what happened to each
// attempt.
func (w *world) askPoolStatus(ctx context.Context, spec resourcealpha.ResourcePoolStatusRequestSpec) (answered, error) {
	pool := ptr.Deref(spec.PoolName, "")
	attr := ptr.Deref(spec.DefaultPartitionTypeAttribute, "")
	var notes []string
	for attempt := 1; attempt <= poolStatusAttempts; attempt++ {
		before, err := w.snapshotPools(ctx, spec.Driver)
		if err != nil {
			return answered{}, err
		}
		w.poolStatus.seq++
		req, err := w.createPoolStatus(ctx, fmt.Sprintf("ask-%d", w.poolStatus.seq), spec)
		if err != nil {
			return answered{}, err
		}
		got, err := w.waitPoolStatus(ctx, req.Name, poolStatusWait)
		if err != nil {
			return answered{}, err
		}
		after, err := w.snapshotPools(ctx, spec.Driver)
		if err != nil {
			return answered{}, err
		}
		wantBefore, want := expectedPools(before, spec.Driver, pool, attr), expectedPools(after, spec.Driver, pool, attr)
		switch {
		case got == nil:
			note := fmt.Sprintf("%s: no status within %v (the stored objects give: %s)", req.Name, poolStatusWait, describeExpected(want))
			for _, p := range want {
				if p.Generation == 0 {
					note += fmt.Sprintf("; pool %s is at generation 0, and 1.37.2 rejects a status that lists one (pools[].generation is +k8s:required)", p.Pool)
				}
			}
			notes = append(notes, note)
		case describeExpected(wantBefore) != describeExpected(want):
			notes = append(notes, fmt.Sprintf("%s: the stored objects changed while the controller computed", req.Name))
		default:
			return answered{req: got, want: want}, nil
		}
	}
	return answered{}, fmt.Errorf("no ResourcePoolStatusRequest for driver %s%s was answered on stable objects in %d attempts:\n- %s",
		spec.Driver, poolSuffix(pool), poolStatusAttempts, strings.Join(notes, "\n- "))
}

func poolSuffix(pool string) string {
	if pool == "" {
		return ""
	}
	return " pool " + pool
}

// compare lists where the answer differs from the kit's pools: the
// Complete condition, poolCount (before truncation), the pools in order
// (driver, then name) up to the limit, and each pool's fields.
func (a answered) compare() []string {
	r, st := a.req, a.req.Status
	if err := completeCondition(r); err != nil {
		return []string{err.Error()}
	}
	var diffs []string
	if st.PoolCount == nil || int(*st.PoolCount) != len(a.want) {
		diffs = append(diffs, fmt.Sprintf("%s: poolCount %s, the stored slices hold %d pools", r.Name, intString(st.PoolCount), len(a.want)))
	}
	limit := int(ptr.Deref(r.Spec.Limit, resourcealpha.ResourcePoolStatusRequestLimitDefault))
	shown := min(limit, len(a.want))
	if len(st.Pools) != shown {
		diffs = append(diffs, fmt.Sprintf("%s: %d pools listed, expected %d (limit %d, %d pools)", r.Name, len(st.Pools), shown, limit, len(a.want)))
	}
	for i := range min(shown, len(st.Pools)) {
		got, want := st.Pools[i], a.want[i]
		if got.Driver != want.Driver || got.PoolName != want.Pool {
			diffs = append(diffs, fmt.Sprintf("%s: pools[%d] is %s/%s, sorted by driver and name it must be %s/%s", r.Name, i, got.Driver, got.PoolName, want.Driver, want.Pool))
			continue
		}
		diffs = append(diffs, comparePool(got, want)...)
	}
	return diffs
}

func (w *world) poolStatusOfDriver(ctx context.Context) error {
	a, err := w.askPoolStatus(ctx, resourcealpha.ResourcePoolStatusRequestSpec{Driver: w.Driver.DriverName})
	if err != nil {
		return err
	}
	if len(a.want) == 0 {
		return fmt.Errorf("driver %s has no ResourceSlices: nothing to count", w.Driver.DriverName)
	}
	return kit.Findings(a.compare())
}

// poolStatusPartitionsOfDriver: the driver names partition type attributes
// (a capability); its pools that do must report the kit's partition
// summary, or the validationError the kit predicts for them: 1.37.2 keys a
// partition type's cost by counter set and counter, so a pool with one
// counter set per GPU and the same profile on two GPUs gets
// PartitionCostMismatch instead of a summary.
func (w *world) poolStatusPartitionsOfDriver(ctx context.Context) (context.Context, error) {
	a, err := w.askPoolStatus(ctx, resourcealpha.ResourcePoolStatusRequestSpec{Driver: w.Driver.DriverName})
	if err != nil {
		return ctx, err
	}
	typed := 0
	for _, p := range a.want {
		if len(p.Partitions) > 0 || strings.HasPrefix(p.ViewError, "Partition") {
			typed++
		}
	}
	if typed == 0 {
		return kit.Skip(ctx, fmt.Sprintf("no pool of driver %s names a partition type attribute on counter-consuming devices", w.Driver.DriverName))
	}
	return ctx, kit.Findings(a.compare())
}

func (w *world) poolStatusNoPools(ctx context.Context, driver string) error {
	a, err := w.askPoolStatus(ctx, resourcealpha.ResourcePoolStatusRequestSpec{Driver: driver})
	if err != nil {
		return err
	}
	if len(a.want) != 0 {
		return fmt.Errorf("the stored ResourceSlices hold %d pools of driver %s: the step needs a driver without any", len(a.want), driver)
	}
	return kit.Findings(a.compare())
}
