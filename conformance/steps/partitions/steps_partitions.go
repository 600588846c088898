package partitions

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/inventory"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// partitionSteps cover partitionable devices (KEP-4815): partitions that
// draw from a device's counter set, picked by what their counters allow
// (conformance/inventory roles), as the scheduler allocates them.
func (w *world) partitionSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^the driver publishes partitionable devices$`, Fn: w.driverPublishesPartitionable, Needs: func(n *kit.ScenarioNeeds, _ []string) {
			n.PartitionableAtLeast = max(n.PartitionableAtLeast, 1)
		}},
		{Pattern: `^the driver publishes "([^"]+)" partitions(?: on at least (\d+) devices)?$`, Fn: w.driverPublishesRole, Needs: func(n *kit.ScenarioNeeds, a []string) {
			kit.NeedsRole(n, a[0])
			c := 1
			fmt.Sscan(a[1], &c) //nolint:errcheck // absent: 1
			n.PartitionableAtLeast = max(n.PartitionableAtLeast, c)
		}},
		{Pattern: `^the driver publishes "([^"]+)" partitions with a memory capacity$`, Fn: w.driverPublishesRoleWithMemory, Needs: func(n *kit.ScenarioNeeds, a []string) {
			kit.NeedsRole(n, a[0])
			n.PartitionableAtLeast = max(n.PartitionableAtLeast, 1)
		}},
		{Pattern: `^a partitionable device "([^"]+)" with "([^"]+)"(?: and "([^"]+)")? partitions$`, Fn: w.pickPartitionable, Needs: func(n *kit.ScenarioNeeds, a []string) {
			n.PartitionableNamed[a[0]] = true
			kit.NeedsRole(n, a[1])
			kit.NeedsRole(n, a[2])
		}},
		{Pattern: `^the driver publishes pre-created partitions$`, Fn: w.driverPublishesPreCreated, Needs: func(n *kit.ScenarioNeeds, _ []string) {
			n.PreCreatedAtLeast = max(n.PreCreatedAtLeast, 1)
		}},
		{Pattern: `^a device "([^"]+)" with pre-created partitions$`, Fn: w.pickPreCreated, Needs: func(n *kit.ScenarioNeeds, a []string) { n.PreCreatedNamed[a[0]] = true }},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) "([^"]+)" partitions?(?: on device "([^"]+)")?$`, Fn: w.claimPartitions, Needs: func(n *kit.ScenarioNeeds, a []string) {
			kit.NeedsRole(n, a[2])
			if a[3] == "" {
				n.PartitionsAnywhere++
			}
		}},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting 1 pre-created partition of device "([^"]+)"$`, Fn: w.claimPreCreated},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the whole device "([^"]+)"$`, Fn: w.claimWhole},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting the whole device "([^"]+)" and 1 "([^"]+)" partition on it$`, Fn: w.claimWholeAndPartition},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting one device with at least the memory of a "([^"]+)" partition: such a partition first, else a whole device$`, Fn: w.claimPreferPartition, Needs: needsPartitionAnywhere},
		{Pattern: `^a ResourceClaim "([^"]+)" requesting one device with more memory than any "([^"]+)" partition has: such a partition first, else a whole device$`, Fn: w.claimPreferTooSmallPartition, Needs: needsPartitionAnywhere},
		{Pattern: `^the claim "([^"]+)" is allocated from subrequest "([^"]+)"$`, Fn: w.claimAllocatedFromSubrequest},
		{Pattern: `^the device allocated to the claim "([^"]+)" has at least the memory of a "([^"]+)" partition$`, Fn: w.claimDeviceMemory},
		{Pattern: `^the claim "([^"]+)" is allocated partitions of device "([^"]+)"$`, Fn: w.claimOnDevice},
		{Pattern: `^the claim "([^"]+)" is allocated a partition of a device other than "([^"]+)"$`, Fn: w.claimNotOnDevice},
		{Pattern: `^the devices allocated to the claims "([^"]+)" and "([^"]+)" fit their counter sets together$`, Fn: w.claimsFitCounters},
	}
}

func needsPartitionAnywhere(n *kit.ScenarioNeeds, a []string) {
	kit.NeedsRole(n, a[1])
	n.PartitionsAnywhere++
}

// subrequest names of the kit's prioritized-list claims.
const (
	subrequestPartition = "partition"
	subrequestWhole     = "whole"
)

// driverPublishesPartitionable goes on when the driver claims partitionable
// devices (KEP-4815) and declares their DeviceClass.
func (w *world) driverPublishesPartitionable(ctx context.Context) (context.Context, error) {
	ctx, err := w.RequireCapability(ctx, declaration.CapabilityPartitionableDevices)
	if err != nil {
		return ctx, err
	}
	if w.Driver.PartitionClassName == "" {
		return kit.Skip(ctx, kit.PartitionSkipReason)
	}
	return ctx, nil
}

// unitsWithRole are the units of the driver's devices now (the scenario's
// leased ones when it holds a lease) whose partitions offer the role.
func (w *world) unitsWithRole(ctx context.Context, role inventory.Role) []inventory.Unit {
	var out []inventory.Unit
	for _, u := range w.LeasedUnits(ctx) {
		if _, ok := u.Profile(role); ok {
			out = append(out, u)
		}
	}
	return out
}

// describeUnits says what the partitionable units offer, for skip reasons.
func describeUnits(units []inventory.Unit) string {
	var parts []string
	for _, u := range units {
		if u.Partitionable() {
			parts = append(parts, fmt.Sprintf("%s (%s)", u.ID, u.ProfileSummary()))
		}
	}
	if len(parts) == 0 {
		return "no device with counter-consuming partitions"
	}
	return strings.Join(parts, "; ")
}

func (w *world) driverPublishesRole(ctx context.Context, roleName, devices string) (context.Context, error) {
	if w.Driver.PartitionClassName == "" {
		return kit.Skip(ctx, kit.PartitionSkipReason)
	}
	role, err := inventory.ParseRole(roleName)
	if err != nil {
		return ctx, err
	}
	want := 1
	if devices != "" {
		if _, err := fmt.Sscan(devices, &want); err != nil {
			return ctx, fmt.Errorf("device count %q: %w", devices, err)
		}
	}
	if got := len(w.unitsWithRole(ctx, role)); got < want {
		return kit.Skip(ctx, fmt.Sprintf("the driver publishes %q partitions (%s) on %d devices; the scenario needs %d. Its partitionable devices: %s",
			role, role.Describe(), got, want, describeUnits(w.DevicePool(ctx).Units())))
	}
	return ctx, nil
}

// driverPublishesRoleWithMemory goes on when the role's partitions publish
// the driver's memory capacity.
func (w *world) driverPublishesRoleWithMemory(ctx context.Context, roleName string) (context.Context, error) {
	ctx, err := w.driverPublishesRole(ctx, roleName, "")
	if err != nil {
		return ctx, err
	}
	if w.Driver.MemoryCapacity == "" {
		return kit.Skip(ctx, report.NotDeclaredPrefix+"the driver declares no memory capacity (deviceKinds[].memoryCapacity, or --memory-capacity): the kit cannot select its devices by memory")
	}
	if _, err := w.roleMemory(ctx, roleName); err != nil {
		return ctx, err
	}
	return ctx, nil
}

// named is a device the scenario named: its unit and its identity as a
// parent of partitions.
type named struct {
	unit   inventory.Unit
	parent string
}

// unitParent is the identity the unit's partitions name as their parent.
func unitParent(u inventory.Unit) string {
	if p := u.Parents(); len(p) > 0 {
		return p[0]
	}
	for _, d := range u.Partitions {
		if d.Parent != "" {
			return d.Parent
		}
	}
	return ""
}

// pickPartitionable names a device of the scenario's lease whose partitions
// offer the roles and that the scenario has not named yet.
func (w *world) pickPartitionable(ctx context.Context, alias, role, role2 string) error {
	var roles []inventory.Role
	for _, name := range []string{role, role2} {
		if name == "" {
			continue
		}
		r, err := inventory.ParseRole(name)
		if err != nil {
			return err
		}
		roles = append(roles, r)
	}
	taken := map[string]bool{}
	for _, n := range w.named {
		taken[n.unit.ID] = true
	}
	for _, u := range w.LeasedUnits(ctx) {
		ok := u.Partitionable() && !taken[u.ID] && len(u.Whole) > 0
		for _, r := range roles {
			_, has := u.Profile(r)
			ok = ok && has
		}
		if ok {
			w.named[alias] = named{unit: u, parent: unitParent(u)}
			return nil
		}
	}
	return fmt.Errorf("no partitionable device with a whole device and %v partitions is left for %q; the driver's: %s", roles, alias, describeUnits(w.LeasedUnits(ctx)))
}

func (w *world) driverPublishesPreCreated(ctx context.Context) (context.Context, error) {
	if w.Driver.PartitionClassName == "" {
		return kit.Skip(ctx, kit.PartitionSkipReason)
	}
	for _, u := range w.DevicePool(ctx).Units() {
		if len(u.PreCreated()) > 0 {
			return ctx, nil
		}
	}
	return kit.Skip(ctx, fmt.Sprintf("the driver publishes no device of class %s with %q and %q attributes that consumes no counters (no pre-created partition)",
		w.Driver.PartitionClassName, w.Driver.ProfileAttribute, w.Driver.ParentUUIDAttribute))
}

// pickPreCreated names a device of the scenario's lease with pre-created
// partitions.
func (w *world) pickPreCreated(ctx context.Context, alias string) error {
	for _, u := range w.LeasedUnits(ctx) {
		if len(u.PreCreated()) > 0 {
			w.named[alias] = named{unit: u, parent: unitParent(u)}
			return nil
		}
	}
	return fmt.Errorf("no device with pre-created partitions is left for %q", alias)
}

func (w *world) namedDevice(alias string) (named, error) {
	n, ok := w.named[alias]
	if !ok {
		return named{}, fmt.Errorf("no device %q was named in this scenario (a step \"a partitionable device %q with ... partitions\" or \"a device %q with pre-created partitions\" must come first)", alias, alias, alias)
	}
	return n, nil
}

// roleSelector matches the partitions of the role on the named device, or on
// any device of the scenario's lease that offers the role.
func (w *world) roleSelector(ctx context.Context, roleName, alias string) (string, error) {
	role, err := inventory.ParseRole(roleName)
	if err != nil {
		return "", err
	}
	names := w.Driver.PartitionNames()
	if alias != "" {
		n, err := w.namedDevice(alias)
		if err != nil {
			return "", err
		}
		p, ok := n.unit.Profile(role)
		if !ok {
			return "", fmt.Errorf("device %q (%s) has no %q partitions: %s", alias, n.unit.ID, role, n.unit.ProfileSummary())
		}
		return names.UnitSelector(n.parent, p.Profile), nil
	}
	var alts []string
	for _, u := range w.unitsWithRole(ctx, role) {
		p, _ := u.Profile(role)
		alts = append(alts, "("+names.UnitSelector(unitParent(u), p.Profile)+")")
	}
	if len(alts) == 0 {
		return "", fmt.Errorf("no device of the driver has %q partitions (%s): %s", role, role.Describe(), describeUnits(w.LeasedUnits(ctx)))
	}
	return strings.Join(alts, " || "), nil
}

func (w *world) claimPartitions(ctx context.Context, name string, n int, role, alias string) error {
	sel, err := w.roleSelector(ctx, role, alias)
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.PartitionClassName, int64(n), sel)))
}

// claimPreCreated asks for one pre-created partition of the named device,
// by its identity.
func (w *world) claimPreCreated(ctx context.Context, name, alias string) error {
	n, err := w.namedDevice(alias)
	if err != nil {
		return err
	}
	for _, d := range n.unit.PreCreated() {
		if d.Identity != "" {
			return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.PartitionClassName, 1, kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, d.Identity))))
		}
	}
	return fmt.Errorf("device %q: none of its pre-created partitions has a %q attribute to select it by", alias, w.Driver.UUIDAttribute)
}

func (w *world) claimWhole(ctx context.Context, name, alias string) error {
	n, err := w.namedDevice(alias)
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, kit.ClaimSpec(w.Driver.DeviceClass(), 1, kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, n.parent))))
}

// claimWholeAndPartition asks, in one claim, for a device whole and for one
// of its partitions: together they need more than its counter set holds.
func (w *world) claimWholeAndPartition(ctx context.Context, name, alias, role string) error {
	n, err := w.namedDevice(alias)
	if err != nil {
		return err
	}
	sel, err := w.roleSelector(ctx, role, alias)
	if err != nil {
		return err
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		kit.ExactRequest(subrequestWhole, w.Driver.DeviceClass(), 1, kit.UuidSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, n.parent)),
		kit.ExactRequest(subrequestPartition, w.Driver.PartitionClassName, 1, sel),
	}}}
	return w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// preferPartitionSpec is a claim with one prioritized-list request: a
// partition of the role with at least min memory first, else a whole device
// with at least min memory.
func (w *world) preferPartitionSpec(roleSel string, min resource.Quantity) resourceapi.ResourceClaimSpec {
	names := w.Driver.PartitionNames()
	sub := func(name, class string, selectors ...string) resourceapi.DeviceSubRequest {
		s := resourceapi.DeviceSubRequest{Name: name, DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
		for _, e := range selectors {
			s.Selectors = append(s.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
		}
		return s
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: kit.RequestName,
		FirstAvailable: []resourceapi.DeviceSubRequest{
			sub(subrequestPartition, w.Driver.PartitionClassName, roleSel, names.MemorySelector(min)),
			sub(subrequestWhole, w.Driver.DeviceClass(), names.MemorySelector(min)),
		},
	}}}}
}

// roleMemory is the least and the most memory the role's partitions have on
// the scenario's devices.
func (w *world) roleMemory(ctx context.Context, roleName string) ([2]resource.Quantity, error) {
	var out [2]resource.Quantity
	role, err := inventory.ParseRole(roleName)
	if err != nil {
		return out, err
	}
	all, err := w.CurrentDevices(ctx)
	if err != nil {
		return out, err
	}
	names := w.Driver.PartitionNames()
	found := false
	for _, u := range w.unitsWithRole(ctx, role) {
		p, _ := u.Profile(role)
		for _, d := range p.Devices {
			pd, ok := kit.FindDevice(all, d.Pool, d.Name)
			if !ok {
				continue
			}
			m, ok := names.MemoryOf(pd.Capacity)
			if !ok {
				return out, fmt.Errorf("%q partition %s publishes no %q capacity", role, d.ID(), w.Driver.MemoryCapacity)
			}
			if !found || m.Cmp(out[0]) < 0 {
				out[0] = m
			}
			if !found || m.Cmp(out[1]) > 0 {
				out[1] = m
			}
			found = true
		}
	}
	if !found {
		return out, fmt.Errorf("no %q partition of the driver publishes a %q capacity", role, w.Driver.MemoryCapacity)
	}
	return out, nil
}

// claimPreferPartition asks for at least the memory of the smallest of the
// role's partitions: a partition of the role can satisfy the first
// alternative.
func (w *world) claimPreferPartition(ctx context.Context, name, role string) error {
	return w.claimPreferRole(ctx, name, role, func(least, _ resource.Quantity) resource.Quantity { return least })
}

// claimPreferTooSmallPartition asks for one byte more memory than the
// largest partition of the role has, so the first alternative cannot be
// satisfied and a whole device must be chosen.
func (w *world) claimPreferTooSmallPartition(ctx context.Context, name, role string) error {
	return w.claimPreferRole(ctx, name, role, func(_, most resource.Quantity) resource.Quantity {
		return *resource.NewQuantity(most.Value()+1, resource.BinarySI)
	})
}

// claimPreferRole creates a prioritized-list claim: a partition of the role
// first, else a whole device, both with the memory minimum derives from the
// least and most memory the role's partitions have.
func (w *world) claimPreferRole(ctx context.Context, name, role string, minimum func(least, most resource.Quantity) resource.Quantity) error {
	mem, err := w.roleMemory(ctx, role)
	if err != nil {
		return err
	}
	sel, err := w.roleSelector(ctx, role, "")
	if err != nil {
		return err
	}
	return w.CreateClaim(ctx, kit.NewClaim(name, w.preferPartitionSpec(sel, minimum(mem[0], mem[1]))))
}

func (w *world) claimAllocatedFromSubrequest(ctx context.Context, claim, sub string) error {
	results, _, err := w.AllocatedResults(ctx, claim)
	if err != nil {
		return err
	}
	want := kit.RequestName + "/" + sub
	for _, r := range results {
		if r.Request != want {
			return fmt.Errorf("claim %s: device %s/%s was allocated for request %s, expected %s", claim, r.Pool, r.Device, r.Request, want)
		}
	}
	return nil
}

func (w *world) claimDeviceMemory(ctx context.Context, claim, role string) error {
	mem, err := w.roleMemory(ctx, role)
	if err != nil {
		return err
	}
	min := mem[0]
	_, devices, err := w.AllocatedResults(ctx, claim)
	if err != nil {
		return err
	}
	var bad []string
	for _, d := range devices {
		m, ok := w.Driver.PartitionNames().MemoryOf(d.Capacity)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("claim %s: allocated device %s publishes no %q capacity", claim, d.ID(), w.Driver.MemoryCapacity))
		case m.Cmp(min) < 0:
			bad = append(bad, fmt.Sprintf("claim %s: allocated device %s has %s of memory, the claim asked for at least %s", claim, d.ID(), m.String(), min.String()))
		}
	}
	return kit.Findings(bad)
}

// claimParents returns the parent identities of the partitions allocated to
// a claim; a device that is not a partition is a finding.
func (w *world) claimParents(ctx context.Context, claim string) ([]string, error) {
	_, devices, err := w.AllocatedResults(ctx, claim)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range devices {
		p, ok := w.Driver.PartitionNames().AsPartition(d)
		if !ok {
			return nil, fmt.Errorf("claim %s: allocated device %s is not a partition (it has no %q and %q attributes)", claim, d.ID(), w.Driver.ProfileAttribute, w.Driver.ParentUUIDAttribute)
		}
		out = append(out, p.ParentUUID)
	}
	return out, nil
}

func (w *world) claimOnDevice(ctx context.Context, claim, alias string) error {
	return w.claimPartitionsOf(ctx, claim, alias, true)
}

func (w *world) claimNotOnDevice(ctx context.Context, claim, alias string) error {
	return w.claimPartitionsOf(ctx, claim, alias, false)
}

// claimPartitionsOf checks that every partition allocated to the claim is
// (on) or is not (!on) a partition of the device named alias.
func (w *world) claimPartitionsOf(ctx context.Context, claim, alias string, on bool) error {
	n, err := w.namedDevice(alias)
	if err != nil {
		return err
	}
	got, err := w.claimParents(ctx, claim)
	if err != nil {
		return err
	}
	for _, p := range got {
		switch {
		case on && p != n.parent:
			return fmt.Errorf("claim %s: allocated a partition of device %s, expected one of device %q (%s)", claim, p, alias, n.parent)
		case !on && p == n.parent:
			return fmt.Errorf("claim %s: allocated a partition of device %q (%s), expected another device", claim, alias, n.parent)
		}
	}
	return nil
}

func (w *world) claimsFitCounters(ctx context.Context, a, b string) error {
	var devices []kit.PublishedDevice
	for _, claim := range []string{a, b} {
		_, ds, err := w.AllocatedResults(ctx, claim)
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
	slices, err := w.DriverSlices(ctx)
	if err != nil {
		return err
	}
	return kit.Findings(kit.CheckCounters(devices, kit.CounterSets(slices, w.Driver.DriverName)))
}
