package conformance

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
)

// partitionSteps cover partitionable devices (KEP-4815): GPU partitions that
// draw from a per-GPU counter set, as the scheduler allocates them and as
// the container sees them (MIG devices through NVML, capability nodes).
func (w *world) partitionSteps() []stepDef {
	return []stepDef{
		{`^the driver publishes partitions with profile prefix "([^"]+)"(?: on at least (\d+) GPUs)?$`, w.driverPublishesPartitions},
		{`^a partitionable GPU "([^"]+)" with partitions of profile prefix "([^"]+)"$`, w.pickPartitionableGPU},
		{`^the driver publishes pre-created MIG devices with profile prefix "([^"]+)"$`, w.driverPublishesPreCreated},
		{`^a GPU "([^"]+)" with pre-created MIG devices of profile prefix "([^"]+)"$`, w.pickPreCreatedGPU},
		{`^a ResourceClaim "([^"]+)" requesting (\d+) partitions? with profile prefix "([^"]+)"(?: on GPU "([^"]+)")?$`, w.claimPartitions},
		{`^a ResourceClaim "([^"]+)" requesting the whole GPU "([^"]+)"$`, w.claimWholeGPU},
		{`^a ResourceClaim "([^"]+)" requesting the whole GPU "([^"]+)" and 1 partition with profile prefix "([^"]+)" on it$`, w.claimWholeAndPartition},
		{`^a ResourceClaim "([^"]+)" requesting one device with at least "([^"]+)" of memory: a partition with profile prefix "([^"]+)" first, else a whole GPU$`, w.claimPreferPartition},
		{`^a ResourceClaim "([^"]+)" requesting one device with more memory than any partition with profile prefix "([^"]+)" has: such a partition first, else a whole GPU$`, w.claimPreferTooSmallPartition},
		{`^the claim "([^"]+)" is allocated from subrequest "([^"]+)"$`, w.claimAllocatedFromSubrequest},
		{`^the device allocated to the claim "([^"]+)" has at least "([^"]+)" of memory$`, w.claimDeviceMemory},
		{`^the claim "([^"]+)" is allocated a partition of GPU "([^"]+)"$`, w.claimOnGPU},
		{`^the claim "([^"]+)" is allocated a partition of a GPU other than "([^"]+)"$`, w.claimNotOnGPU},
		{`^the devices allocated to the claims "([^"]+)" and "([^"]+)" fit their counter sets together$`, w.claimsFitCounters},
		{`^pod "([^"]+)" sees exactly the GPUs and MIG devices allocated to its claims through NVML$`, w.podSeesAllocatedMIG},
		{`^pod "([^"]+)" has device nodes for exactly its GPUs and the capabilities of its MIG devices$`, w.podHasMIGDeviceNodes},
		{`^pods "([^"]+)" and "([^"]+)" see different MIG devices$`, w.podsSeeDifferentMIG},
	}
}

// subrequest names of the kit's prioritized-list claims.
const (
	subrequestPartition = "partition"
	subrequestWhole     = "whole"
)

// partitionSkipReason explains why partition scenarios do not apply.
const partitionSkipReason = "the driver under test declares no partition DeviceClass (the kit's partition class is empty)"

// partitions returns the partitions of the partition class whose profile
// starts with prefix.
func (w *world) partitions(ctx context.Context, prefix string) ([]partition, error) {
	devices, err := w.classDevices(ctx, w.cfg.PartitionClassName)
	if err != nil {
		return nil, err
	}
	return w.cfg.partitionNames().partitionsWithPrefix(devices, prefix), nil
}

func (w *world) driverPublishesPartitions(ctx context.Context, prefix, gpus string) (context.Context, error) {
	if w.cfg.PartitionClassName == "" {
		return skip(ctx, partitionSkipReason)
	}
	want := 1
	if gpus != "" {
		if _, err := fmt.Sscan(gpus, &want); err != nil {
			return ctx, fmt.Errorf("GPU count %q: %w", gpus, err)
		}
	}
	parts, err := w.partitions(ctx, prefix)
	if err != nil {
		return ctx, err
	}
	if got := len(parents(parts)); got < want {
		return skip(ctx, fmt.Sprintf("the driver publishes counter-consuming devices of class %s with a %q attribute starting with %q on %d GPUs; the scenario needs %d",
			w.cfg.PartitionClassName, w.cfg.ProfileAttribute, prefix, got, want))
	}
	return ctx, nil
}

// pickPartitionableGPU names the first GPU (by UUID) that has partitions of
// the profile prefix and a whole device in the kit's DeviceClass.
func (w *world) pickPartitionableGPU(ctx context.Context, alias, prefix string) error {
	parts, err := w.partitions(ctx, prefix)
	if err != nil {
		return err
	}
	whole, err := w.classDevices(ctx, w.cfg.deviceClass())
	if err != nil {
		return err
	}
	wholeUUIDs := sets.New[string]()
	for _, d := range whole {
		if a, ok := observe.LookupAttribute(d.Attributes, w.cfg.DriverName, w.cfg.UUIDAttribute); ok && a.StringValue != nil {
			wholeUUIDs.Insert(*a.StringValue)
		}
	}
	for _, parent := range parents(parts) {
		if wholeUUIDs.Has(parent) {
			w.gpus[alias] = parent
			return nil
		}
	}
	return fmt.Errorf("no GPU has both partitions with profile prefix %q (parents %s) and a whole device in DeviceClass %s",
		prefix, strings.Join(parents(parts), ", "), w.cfg.deviceClass())
}

// preCreated returns the devices of the partition class with a profile
// that starts with prefix and a parent GPU that consume no counters: MIG
// devices that exist before any claim (static MIG), published as plain
// devices.
func (w *world) preCreated(ctx context.Context, prefix string) ([]partition, error) {
	devices, err := w.classDevices(ctx, w.cfg.PartitionClassName)
	if err != nil {
		return nil, err
	}
	names := w.cfg.partitionNames()
	var out []partition
	for _, d := range devices {
		if p, ok := names.asPartition(d); ok && len(d.Consumes) == 0 && strings.HasPrefix(p.Profile, prefix) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (w *world) driverPublishesPreCreated(ctx context.Context, prefix string) (context.Context, error) {
	if w.cfg.PartitionClassName == "" {
		return skip(ctx, partitionSkipReason)
	}
	parts, err := w.preCreated(ctx, prefix)
	if err != nil {
		return ctx, err
	}
	if len(parts) == 0 {
		return skip(ctx, fmt.Sprintf("the driver publishes no device of class %s with a %q attribute starting with %q that consumes no counters (no pre-created MIG device)",
			w.cfg.PartitionClassName, w.cfg.ProfileAttribute, prefix))
	}
	return ctx, nil
}

// pickPreCreatedGPU names the GPU of the first pre-created MIG device of the
// profile prefix.
func (w *world) pickPreCreatedGPU(ctx context.Context, alias, prefix string) error {
	parts, err := w.preCreated(ctx, prefix)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("no pre-created MIG device with profile prefix %q is published", prefix)
	}
	w.gpus[alias] = parts[0].ParentUUID
	return nil
}

func (w *world) gpu(alias string) (string, error) {
	uuid, ok := w.gpus[alias]
	if !ok {
		return "", fmt.Errorf("no GPU %q was named in this scenario (a step \"a partitionable GPU %q with partitions of profile prefix ...\" or \"a GPU %q with pre-created MIG devices ...\" must come first)", alias, alias, alias)
	}
	return uuid, nil
}

func (w *world) claimPartitions(ctx context.Context, name string, n int, prefix, alias string) error {
	names := w.cfg.partitionNames()
	sel := []string{names.profilePrefixSelector(prefix)}
	if alias != "" {
		parent, err := w.gpu(alias)
		if err != nil {
			return err
		}
		sel = append(sel, names.parentSelector(parent))
	}
	return w.createClaim(ctx, newClaim(name, claimSpec(w.cfg.PartitionClassName, int64(n), sel...)))
}

func (w *world) claimWholeGPU(ctx context.Context, name, alias string) error {
	uuid, err := w.gpu(alias)
	if err != nil {
		return err
	}
	return w.createClaim(ctx, newClaim(name, claimSpec(w.cfg.deviceClass(), 1, uuidSelector(w.cfg.DriverName, w.cfg.UUIDAttribute, uuid))))
}

// claimWholeAndPartition asks, in one claim, for a GPU whole and for one of
// its partitions: together they need more than the GPU's counter set holds.
func (w *world) claimWholeAndPartition(ctx context.Context, name, alias, prefix string) error {
	uuid, err := w.gpu(alias)
	if err != nil {
		return err
	}
	names := w.cfg.partitionNames()
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		exactRequest(subrequestWhole, w.cfg.deviceClass(), 1, uuidSelector(w.cfg.DriverName, w.cfg.UUIDAttribute, uuid)),
		exactRequest(subrequestPartition, w.cfg.PartitionClassName, 1, names.profilePrefixSelector(prefix), names.parentSelector(uuid)),
	}}}
	return w.createClaim(ctx, newClaim(name, spec))
}

// preferPartitionSpec is a claim with one prioritized-list request: a
// partition with the profile prefix and at least min memory first, else a
// whole GPU with at least min memory.
func (w *world) preferPartitionSpec(prefix string, min resource.Quantity) resourceapi.ResourceClaimSpec {
	names := w.cfg.partitionNames()
	sub := func(name, class string, selectors ...string) resourceapi.DeviceSubRequest {
		s := resourceapi.DeviceSubRequest{Name: name, DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
		for _, e := range selectors {
			s.Selectors = append(s.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
		}
		return s
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: requestName,
		FirstAvailable: []resourceapi.DeviceSubRequest{
			sub(subrequestPartition, w.cfg.PartitionClassName, names.profilePrefixSelector(prefix), names.memorySelector(min)),
			sub(subrequestWhole, w.cfg.deviceClass(), names.memorySelector(min)),
		},
	}}}}
}

func (w *world) claimPreferPartition(ctx context.Context, name, memory, prefix string) error {
	min, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("memory %q is not a quantity: %w", memory, err)
	}
	return w.createClaim(ctx, newClaim(name, w.preferPartitionSpec(prefix, min)))
}

// claimPreferTooSmallPartition asks for one byte more memory than the
// largest published partition of the prefix has, so the first alternative
// cannot be satisfied and the whole GPU must be chosen.
func (w *world) claimPreferTooSmallPartition(ctx context.Context, name, prefix string) error {
	parts, err := w.partitions(ctx, prefix)
	if err != nil {
		return err
	}
	names := w.cfg.partitionNames()
	var largest resource.Quantity
	for _, p := range parts {
		if m, ok := names.MemoryOf(p.Capacity); ok && m.Cmp(largest) > 0 {
			largest = m
		}
	}
	if largest.IsZero() {
		return fmt.Errorf("no partition with profile prefix %q has a %q capacity", prefix, w.cfg.MemoryCapacity)
	}
	min := *resource.NewQuantity(largest.Value()+1, resource.BinarySI)
	return w.createClaim(ctx, newClaim(name, w.preferPartitionSpec(prefix, min)))
}

// allocatedResults waits for the claim's allocation and returns the
// driver's results joined with their published devices.
func (w *world) allocatedResults(ctx context.Context, claim string) ([]resourceapi.DeviceRequestAllocationResult, []publishedDevice, error) {
	var c *resourceapi.ResourceClaim
	err := poll(ctx, w.cfg.Timeouts.PodStart, "claim "+claim+" to be allocated", func(ctx context.Context) (bool, string, error) {
		got, err := w.kube.ResourceV1().ResourceClaims(w.ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		c = got
		return got.Status.Allocation != nil, "not allocated", nil
	})
	if err != nil {
		return nil, nil, err
	}
	results := driverResults(c, w.cfg.DriverName)
	if len(results) == 0 {
		return nil, nil, fmt.Errorf("claim %s is allocated no device of driver %s", claim, w.cfg.DriverName)
	}
	all, err := w.currentDevices(ctx)
	if err != nil {
		return nil, nil, err
	}
	devices := make([]publishedDevice, 0, len(results))
	for _, r := range results {
		d, ok := findDevice(all, r.Pool, r.Device)
		if !ok {
			return nil, nil, fmt.Errorf("claim %s: allocated device %s/%s is in no ResourceSlice of driver %s", claim, r.Pool, r.Device, w.cfg.DriverName)
		}
		devices = append(devices, d)
	}
	return results, devices, nil
}

func (w *world) claimAllocatedFromSubrequest(ctx context.Context, claim, sub string) error {
	results, _, err := w.allocatedResults(ctx, claim)
	if err != nil {
		return err
	}
	want := requestName + "/" + sub
	for _, r := range results {
		if r.Request != want {
			return fmt.Errorf("claim %s: device %s/%s was allocated for request %s, expected %s", claim, r.Pool, r.Device, r.Request, want)
		}
	}
	return nil
}

func (w *world) claimDeviceMemory(ctx context.Context, claim, memory string) error {
	min, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("memory %q is not a quantity: %w", memory, err)
	}
	_, devices, err := w.allocatedResults(ctx, claim)
	if err != nil {
		return err
	}
	var bad []string
	for _, d := range devices {
		m, ok := w.cfg.partitionNames().MemoryOf(d.Capacity)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("claim %s: allocated device %s publishes no %q capacity", claim, d.ID(), w.cfg.MemoryCapacity))
		case m.Cmp(min) < 0:
			bad = append(bad, fmt.Sprintf("claim %s: allocated device %s has %s of memory, the claim asked for at least %s", claim, d.ID(), m.String(), min.String()))
		}
	}
	return findings(bad)
}

// claimParents returns the parent UUIDs of the partitions allocated to a
// claim; a device that is not a partition is a finding.
func (w *world) claimParents(ctx context.Context, claim string) ([]string, error) {
	_, devices, err := w.allocatedResults(ctx, claim)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range devices {
		p, ok := w.cfg.partitionNames().asPartition(d)
		if !ok {
			return nil, fmt.Errorf("claim %s: allocated device %s is not a partition (it has no %q and %q attributes)", claim, d.ID(), w.cfg.ProfileAttribute, w.cfg.ParentUUIDAttribute)
		}
		out = append(out, p.ParentUUID)
	}
	return out, nil
}

func (w *world) claimOnGPU(ctx context.Context, claim, alias string) error {
	return w.claimPartitionsOf(ctx, claim, alias, true)
}

func (w *world) claimNotOnGPU(ctx context.Context, claim, alias string) error {
	return w.claimPartitionsOf(ctx, claim, alias, false)
}

// claimPartitionsOf checks that every partition allocated to the claim is
// (on) or is not (!on) a partition of the GPU named alias.
func (w *world) claimPartitionsOf(ctx context.Context, claim, alias string, on bool) error {
	uuid, err := w.gpu(alias)
	if err != nil {
		return err
	}
	got, err := w.claimParents(ctx, claim)
	if err != nil {
		return err
	}
	for _, p := range got {
		switch {
		case on && p != uuid:
			return fmt.Errorf("claim %s: allocated a partition of GPU %s, expected one of GPU %q (%s)", claim, p, alias, uuid)
		case !on && p == uuid:
			return fmt.Errorf("claim %s: allocated a partition of GPU %q (%s), expected another GPU", claim, alias, uuid)
		}
	}
	return nil
}

func (w *world) claimsFitCounters(ctx context.Context, a, b string) error {
	var devices []publishedDevice
	for _, claim := range []string{a, b} {
		_, ds, err := w.allocatedResults(ctx, claim)
		if err != nil {
			return err
		}
		devices = append(devices, ds...)
	}
	consuming := 0
	for _, d := range devices {
		if len(d.Consumes) > 0 {
			consuming++
		}
	}
	if consuming == 0 {
		return fmt.Errorf("no device allocated to claims %s and %s consumes counters, so there is nothing to compare", a, b)
	}
	slices, err := listDriverSlices(ctx, w.kube, w.cfg.DriverName)
	if err != nil {
		return err
	}
	return findings(checkCounters(devices, counterSets(slices, w.cfg.DriverName)))
}

func (w *world) podSeesAllocatedMIG(ctx context.Context, name string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	return ctx, findings(observe.CheckMIGNVML(name, w.cfg.partitionNames().PartitionNames, p.devices, *p.report))
}

func (w *world) podHasMIGDeviceNodes(ctx context.Context, name string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	return ctx, findings(observe.CheckMIGDeviceNodes(name, *p.report))
}

func (w *world) podsSeeDifferentMIG(a, b string) error {
	uuids := map[string]sets.Set[string]{}
	for _, name := range []string{a, b} {
		p, err := w.runningPod(name)
		if err != nil {
			return err
		}
		uuids[name] = sets.New[string]()
		for _, g := range p.report.NVML.GPUs {
			for _, m := range g.MIGDevices {
				uuids[name].Insert(m.UUID)
			}
		}
		if uuids[name].Len() == 0 {
			return fmt.Errorf("pod %s sees no MIG device through NVML, so there is nothing to compare", name)
		}
	}
	if both := uuids[a].Intersection(uuids[b]); both.Len() > 0 {
		return fmt.Errorf("pods %s and %s both see MIG devices %s", a, b, strings.Join(sets.List(both), ", "))
	}
	return nil
}
