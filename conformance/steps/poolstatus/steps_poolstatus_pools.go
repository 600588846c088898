package poolstatus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	resourcealpha "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// poolStatusPoolSteps publish pools of the test driver whose status the
// KEP-5677 steps ask for: several small pools, pools on named nodes,
// partitionable and shareable pools, and a pool that rolls out a new
// generation slice by slice.
func (w *world) poolStatusPoolSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the test driver publishes pools "([^"]+)", "([^"]+)" and "([^"]+)" of one device each$`, Fn: w.publishOneDevicePools},
		{Pattern: `^the test driver publishes a pool "([^"]+)" of two slices on node "([^"]+)"$`, Fn: w.publishPoolOnNode},
		{Pattern: `^the test driver publishes a pool "([^"]+)" of a slice on node "([^"]+)" and one on node "([^"]+)"$`, Fn: w.publishPoolOnNodes},
		{Pattern: `^the test driver publishes a partitionable pool "([^"]+)" with 2 "half" and 4 "quarter" partitions of one counter set, (naming|not naming) its partition type attribute$`, Fn: w.publishPartitionedPool},
		{Pattern: `^the test driver publishes a pool "([^"]+)" with a device that allows multiple allocations with capacity "([^"]+)" of (\S+) and one that does not$`, Fn: w.publishShareablePool},
		{Pattern: `^the test driver publishes a pool "([^"]+)" of (\d+) devices? at generation (\d+)(?: in the first of (\d+) slices)?$`, Fn: w.publishGeneration},
		{Pattern: `^the test driver publishes slice (\d+) of generation (\d+) of pool "([^"]+)" with (\d+) devices?$`, Fn: w.publishGenerationSlice},
	}
}

// testPoolDevice is a device of the test driver named name (also its role)
// and marked as the scenario's.
func (w *world) testPoolDevice(name string) resourceapi.Device {
	return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		kit.TestRoleAttribute:     {StringValue: ptr.To(name)},
		kit.TestScenarioAttribute: {StringValue: ptr.To(w.Ns)},
	}}
}

func (w *world) publishOneDevicePools(ctx context.Context, a, b, c string) error {
	for _, pool := range []string{a, b, c} {
		s := w.TestSlice(pool, pool, 1)
		s.Spec.Devices = []resourceapi.Device{w.testPoolDevice(pool + "-0")}
		if err := w.CreateSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// onNode puts a test slice on a node: the kit's node names carry the
// scenario's namespace and name no real node, so no kubelet wipes the
// slices and no pod lands there.
func (w *world) onNode(s *resourceapi.ResourceSlice, node string) {
	s.Spec.AllNodes = nil
	s.Spec.NodeName = ptr.To(w.TestObjectName(node))
}

func (w *world) publishPoolOnNode(ctx context.Context, pool, node string) error {
	return w.publishPoolOnNodes(ctx, pool, node, node)
}

func (w *world) publishPoolOnNodes(ctx context.Context, pool, first, second string) error {
	for i, node := range []string{first, second} {
		s := w.TestSlice(fmt.Sprintf("%s-%d", pool, i), pool, 2)
		w.onNode(s, node)
		s.Spec.Devices = []resourceapi.Device{w.testPoolDevice(fmt.Sprintf("%s-%d", pool, i))}
		if err := w.CreateSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// publishPartitionedPool publishes counter set gpu-0 (1Gi of memory) in a
// slice of its own and, in another, 2 "half" partitions drawing 512Mi each
// and 4 "quarter" ones drawing 256Mi, named <pool>-half-<i> and
// <pool>-quarter-<i>, with the test driver's partitionType attribute.
func (w *world) publishPartitionedPool(ctx context.Context, pool, naming string) error {
	if _, err := w.TestDeviceClass(ctx); err != nil {
		return err
	}
	counters := w.TestSlice(pool+"-counters", pool, 2)
	counters.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "gpu-0", Counters: kit.TestCounters(1 << 30)}}
	devices := w.TestSlice(pool+"-devices", pool, 2)
	for _, p := range []struct {
		typ  string
		n    int
		cost int64
	}{{"half", 2, 1 << 29}, {"quarter", 4, 1 << 28}} {
		for i := range p.n {
			d := w.testPoolDevice(fmt.Sprintf("%s-%s-%d", pool, p.typ, i))
			d.Attributes[kit.TestPartitionTypeAttribute] = resourceapi.DeviceAttribute{StringValue: ptr.To(p.typ)}
			d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: kit.TestCounters(p.cost)}}
			devices.Spec.Devices = append(devices.Spec.Devices, d)
		}
	}
	if naming == "naming" {
		devices.Spec.PartitionTypeAttribute = ptr.To(resourceapi.FullyQualifiedName(kit.TestPartitionTypeAttribute))
	}
	for _, s := range []*resourceapi.ResourceSlice{counters, devices} {
		if err := w.CreateSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// publishShareablePool publishes <pool>-shared, which allows multiple
// allocations and has the capacity, and <pool>-single, which does not. The
// scenario skips when the API server drops allowMultipleAllocations
// (feature gate DRAConsumableCapacity off).
func (w *world) publishShareablePool(ctx context.Context, pool, capacity, amount string) (context.Context, error) {
	q, err := resource.ParseQuantity(amount)
	if err != nil {
		return ctx, fmt.Errorf("capacity %s: %w", amount, err)
	}
	s := w.TestSlice(pool, pool, 1)
	shared := w.testPoolDevice(pool + "-shared")
	shared.AllowMultipleAllocations = ptr.To(true)
	shared.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{resourceapi.QualifiedName(capacity): {Value: q}}
	s.Spec.Devices = []resourceapi.Device{shared, w.testPoolDevice(pool + "-single")}
	got, err := w.Kube.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		return ctx, fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
	}
	w.Ledger.Add(kit.KindResourceSlice, s.Name)
	if got.Spec.Devices[0].AllowMultipleAllocations == nil {
		return kit.Skip(ctx, report.NotEligiblePrefix+"needs feature gate DRAConsumableCapacity: the API server drops allowMultipleAllocations")
	}
	return ctx, nil
}

// publishGeneration publishes the first slice of a generation of a pool,
// with n devices named <pool>-g<generation>-<i>, announcing slices slices
// (1 when not given).
func (w *world) publishGeneration(ctx context.Context, pool string, n, generation int, slices string) error {
	count := 1
	if slices != "" {
		var err error
		if count, err = strconv.Atoi(slices); err != nil {
			return fmt.Errorf("slice count %q: %w", slices, err)
		}
	}
	return w.publishGenerationSliceOf(ctx, pool, 1, generation, n, count)
}

// publishGenerationSlice publishes slice index (from 1) of a generation of
// two slices.
func (w *world) publishGenerationSlice(ctx context.Context, index, generation int, pool string, n int) error {
	return w.publishGenerationSliceOf(ctx, pool, index, generation, n, 2)
}

func (w *world) publishGenerationSliceOf(ctx context.Context, pool string, index, generation, n, count int) error {
	s := w.TestSlice(fmt.Sprintf("%s-g%d-%d", pool, generation, index), pool, int64(count))
	s.Spec.Pool.Generation = int64(generation)
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, w.testPoolDevice(fmt.Sprintf("%s-g%d-%d-%d", pool, generation, index, i)))
	}
	return w.CreateSlice(ctx, s)
}

// askTestPool asks for one pool of the test driver and checks the answer
// against the stored objects: exactly that pool.
func (w *world) askTestPool(ctx context.Context, pool, defaultAttr string) (resourcealpha.PoolStatus, expectedPool, error) {
	spec := resourcealpha.ResourcePoolStatusRequestSpec{Driver: kit.TestDriverName, PoolName: ptr.To(w.TestObjectName(pool))}
	if defaultAttr != "" {
		spec.DefaultPartitionTypeAttribute = ptr.To(defaultAttr)
	}
	a, err := w.askPoolStatus(ctx, spec)
	if err != nil {
		return resourcealpha.PoolStatus{}, expectedPool{}, err
	}
	if len(a.want) != 1 {
		return resourcealpha.PoolStatus{}, expectedPool{}, fmt.Errorf("the stored ResourceSlices hold %d pools named %s, expected the scenario's one", len(a.want), *spec.PoolName)
	}
	if err := kit.Findings(a.compare()); err != nil {
		return resourcealpha.PoolStatus{}, expectedPool{}, err
	}
	return a.req.Status.Pools[0], a.want[0], nil
}

func (w *world) poolStatusOnNode(ctx context.Context, pool, node, none string) error {
	got, _, err := w.askTestPool(ctx, pool, "")
	if err != nil {
		return err
	}
	want := ""
	if none == "" {
		want = w.TestObjectName(node)
	}
	if n := ptr.Deref(got.NodeName, ""); n != want {
		return fmt.Errorf("pool %s: nodeName %q, expected %q", got.PoolName, n, want)
	}
	return nil
}

// poolStatusPartitions checks the partition summary of a test pool, given
// as "type=total/allocatable, ..." ("" for none), besides the comparison
// with the stored objects.
func (w *world) poolStatusPartitions(ctx context.Context, pool, withDefault, want string) error {
	attr := ""
	if withDefault != "" {
		attr = kit.TestPartitionTypeAttribute
	}
	got, _, err := w.askTestPool(ctx, pool, attr)
	if err != nil {
		return err
	}
	parts := make([]string, len(got.PartitionSummary))
	for i, p := range got.PartitionSummary {
		parts[i] = fmt.Sprintf("%s=%s/%s", p.Type, intString(p.Total), intString(p.Allocatable))
		if p.Attribute != kit.TestPartitionTypeAttribute {
			return fmt.Errorf("pool %s: partition type %s is grouped by attribute %q, expected %s", got.PoolName, p.Type, p.Attribute, kit.TestPartitionTypeAttribute)
		}
	}
	if g := strings.Join(parts, ", "); g != want {
		return fmt.Errorf("pool %s: partition types %q (type=total/allocatable), expected %q", got.PoolName, g, want)
	}
	return nil
}

func (w *world) poolStatusShareable(ctx context.Context, pool string, full, partial int, capacity, amount string) error {
	got, _, err := w.askTestPool(ctx, pool, "")
	if err != nil {
		return err
	}
	want, err := resource.ParseQuantity(amount)
	if err != nil {
		return fmt.Errorf("capacity %s: %w", amount, err)
	}
	sh := got.ShareableSummary
	if sh == nil {
		return fmt.Errorf("pool %s: no shareableSummary, expected one", got.PoolName)
	}
	if int(ptr.Deref(sh.FullyAvailableDevices, -1)) != full || int(ptr.Deref(sh.PartiallyAvailableDevices, -1)) != partial {
		return fmt.Errorf("pool %s: %s fully and %s partially available shareable devices, expected %d and %d", got.PoolName,
			intString(sh.FullyAvailableDevices), intString(sh.PartiallyAvailableDevices), full, partial)
	}
	for _, c := range sh.Capacity {
		if c.Name == capacity {
			if c.Total == nil || c.Total.Cmp(want) != 0 {
				return fmt.Errorf("pool %s: shareable capacity %s totals %v, expected %s", got.PoolName, capacity, c.Total, amount)
			}
			return nil
		}
	}
	return fmt.Errorf("pool %s: shareableSummary lacks capacity %s (%s)", got.PoolName, capacity, shareableString(sh))
}

func (w *world) poolStatusNoShareable(ctx context.Context, pool string) error {
	got, _, err := w.askTestPool(ctx, pool, "")
	if err != nil {
		return err
	}
	if got.ShareableSummary != nil {
		return fmt.Errorf("pool %s: shareableSummary %s, expected none: no device of the pool allows multiple allocations", got.PoolName, shareableString(got.ShareableSummary))
	}
	return nil
}

// poolStatusTruncated asks for the test driver's pools with a small limit:
// the scenario's pools make more than limit of them.
func (w *world) poolStatusTruncated(ctx context.Context, limit, shown int) error {
	if shown != limit {
		return fmt.Errorf("the step lists the first %d pools with limit %d: they must be equal", shown, limit)
	}
	a, err := w.askPoolStatus(ctx, resourcealpha.ResourcePoolStatusRequestSpec{Driver: kit.TestDriverName, Limit: ptr.To(int32(limit))})
	if err != nil {
		return err
	}
	if len(a.want) <= limit {
		return fmt.Errorf("the stored ResourceSlices hold %d pools of the test driver, not more than the limit %d: nothing to truncate", len(a.want), limit)
	}
	return kit.Findings(a.compare())
}

// poolStatusOfClaim asks for the pool of the claim's device (read once) and
// checks that the kit's computation counts the device allocated, or not.
func (w *world) poolStatusOfClaim(ctx context.Context, claim, with string) error {
	results, ok := w.poolStatus.devices[claim]
	if !ok {
		c, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get claim %s: %w", claim, err)
		}
		results = kit.DriverResults(c, w.Driver.DriverName)
		if len(results) != 1 {
			return fmt.Errorf("claim %s holds %s of driver %s, the step needs exactly one device", claim, kit.ResultIDs(results), w.Driver.DriverName)
		}
		if w.poolStatus.devices == nil {
			w.poolStatus.devices = map[string][]resourceapi.DeviceRequestAllocationResult{}
		}
		w.poolStatus.devices[claim] = results
	}
	r := results[0]
	a, err := w.askPoolStatus(ctx, resourcealpha.ResourcePoolStatusRequestSpec{Driver: w.Driver.DriverName, PoolName: ptr.To(r.Pool)})
	if err != nil {
		return err
	}
	if len(a.want) != 1 {
		return fmt.Errorf("the stored ResourceSlices hold %d pools named %s of driver %s, expected 1", len(a.want), r.Pool, w.Driver.DriverName)
	}
	if allocated := a.want[0].AllocatedDevice(r.Device); allocated != (with == "with") {
		return fmt.Errorf("the stored claims %s device %s/%s allocated, the step expects it %s the claim's device allocated",
			map[bool]string{true: "have", false: "do not have"}[allocated], r.Pool, r.Device, with)
	}
	return kit.Findings(a.compare())
}

func (w *world) createPoolStatusForTestPool(ctx context.Context, alias, pool string) error {
	_, err := w.createPoolStatus(ctx, alias, resourcealpha.ResourcePoolStatusRequestSpec{Driver: kit.TestDriverName, PoolName: ptr.To(w.TestObjectName(pool))})
	return err
}

// poolStatusStaysPending: kube-controller-manager 1.37.2 does not list a
// pool whose newest generation lacks slices with a validationError, as
// dra-1.37-spec.md §14 says: it requeues the request and, after five
// retries within a second, drops it without a status.
func (w *world) poolStatusStaysPending(ctx context.Context, alias string, seconds int) error {
	name, ok := w.poolStatus.requests[alias]
	if !ok {
		return fmt.Errorf("ResourcePoolStatusRequest %q: the scenario did not create it", alias)
	}
	r, err := w.waitPoolStatus(ctx, name, time.Duration(seconds)*time.Second)
	if err != nil {
		return err
	}
	if r != nil {
		return fmt.Errorf("ResourcePoolStatusRequest %s got a status while its pool is incomplete: %d pools %s", name, len(r.Status.Pools), describeConditions(r.Status.Conditions))
	}
	return nil
}

// labelPoolStatus changes the labels of a request without status: any
// update queues it again for the controller (metadata stays mutable).
func (w *world) labelPoolStatus(ctx context.Context, alias string) error {
	r, err := w.poolStatusRequest(ctx, alias)
	if err != nil {
		return err
	}
	r.Labels["drakit.dev/requeue"] = strconv.FormatInt(time.Now().Unix(), 10)
	if _, err := w.Kube.ResourceV1alpha3().ResourcePoolStatusRequests().Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("label ResourcePoolStatusRequest %s: %w", r.Name, err)
	}
	return nil
}

func (w *world) poolStatusAfterRollout(ctx context.Context, alias, pool string, generation, slices, devices int) error {
	name, ok := w.poolStatus.requests[alias]
	if !ok {
		return fmt.Errorf("ResourcePoolStatusRequest %q: the scenario did not create it", alias)
	}
	r, err := w.waitPoolStatus(ctx, name, poolStatusWait)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("ResourcePoolStatusRequest %s got no status within %v after its pool's rollout completed", name, poolStatusWait)
	}
	snap, err := w.snapshotPools(ctx, kit.TestDriverName)
	if err != nil {
		return err
	}
	a := answered{req: r, want: expectedPools(snap, kit.TestDriverName, w.TestObjectName(pool), "")}
	if len(a.want) != 1 || a.want[0].Generation != int64(generation) || int(a.want[0].Slices) != slices || int(a.want[0].Total) != devices {
		return fmt.Errorf("the stored slices give %s, the step expects pool %s at generation %d with %d slices and %d devices", describeExpected(a.want), pool, generation, slices, devices)
	}
	return kit.Findings(a.compare())
}
