package kit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/conformance/inventory"
	"drakit.dev/drakit/conformance/observe"
)

// scenarioNeeds add up what a scenario's steps need of the driver's devices
// (stepDef.needs): the whole devices its claims take at once, the
// partitionable devices it names or partitions anywhere, the pre-created
// partitions, and whether it disturbs the driver for everyone.
type ScenarioNeeds struct {
	WholeAtLeast, WholeClaims int
	WholeWithoutCounters      bool
	sameAttribute             resourceapi.QualifiedName
	PartitionableAtLeast      int
	PartitionableNamed        map[string]bool
	PartitionsAnywhere        int
	roles                     map[inventory.Role]bool
	PreCreatedAtLeast         int
	PreCreatedNamed           map[string]bool
	shared                    int
	exclusive                 bool
}

func NewScenarioNeeds() *ScenarioNeeds {
	return &ScenarioNeeds{PartitionableNamed: map[string]bool{}, roles: map[inventory.Role]bool{}, PreCreatedNamed: map[string]bool{}}
}

// demand is the lease the needs ask for.
func (n *ScenarioNeeds) demand() inventory.Demand {
	d := inventory.Demand{
		Whole:                max(n.WholeAtLeast, n.WholeClaims),
		SameAttribute:        n.sameAttribute,
		WholeWithoutCounters: n.WholeWithoutCounters,
		Partitionable:        max(n.PartitionableAtLeast, len(n.PartitionableNamed)+n.PartitionsAnywhere),
		PreCreated:           max(n.PreCreatedAtLeast, len(n.PreCreatedNamed)),
		Shared:               n.shared,
		Exclusive:            n.exclusive,
	}
	for _, r := range inventory.Roles() {
		if n.roles[r] {
			d.Roles = append(d.Roles, r)
		}
	}
	return d
}

// Needs of the steps, by what their arguments say.
func NeedsWhole(atLeast bool, countArg int) func(*ScenarioNeeds, []string) {
	return func(n *ScenarioNeeds, args []string) {
		c, err := strconv.Atoi(args[countArg])
		if err != nil {
			return // godog reports the bad argument when the step runs
		}
		if atLeast {
			n.WholeAtLeast = max(n.WholeAtLeast, c)
		} else {
			n.WholeClaims += c
		}
	}
}

func NeedsOneWhole(n *ScenarioNeeds, _ []string) { n.WholeClaims++ }

func NeedsExclusive(n *ScenarioNeeds, _ []string) { n.exclusive = true }

func NeedsShared(n *ScenarioNeeds, _ []string) { n.shared = max(n.shared, 1) }

func NeedsRole(n *ScenarioNeeds, role string) {
	if r, err := inventory.ParseRole(role); err == nil {
		n.roles[r] = true
	}
}

// suiteNeeds matches step texts with the kit's step patterns that have
// needs; built once per run.
type stepNeeds struct {
	re    *regexp.Regexp
	Needs func(*ScenarioNeeds, []string)
}

// scenarioDemand sums the needs of the scenario's steps.
func (s *Suite) scenarioDemand(sc *godog.Scenario) inventory.Demand {
	s.needsOnce.Do(func() {
		for _, st := range (&World{Suite: s}).steps() {
			if st.Needs != nil {
				s.stepNeeds = append(s.stepNeeds, stepNeeds{re: regexp.MustCompile(st.Pattern), Needs: st.Needs})
			}
		}
	})
	n := NewScenarioNeeds()
	for _, step := range sc.Steps {
		for _, sn := range s.stepNeeds {
			if m := sn.re.FindStringSubmatch(step.Text); m != nil {
				sn.Needs(n, m[1:])
				break
			}
		}
	}
	return n.demand()
}

// devicePool is the lease pool over the driver's devices, built on first
// use: once the driver publishes (within the publish timeout), its devices
// of the kit's DeviceClass and partition class are divided into units. A
// driver that publishes nothing, or a missing DeviceClass, gives an empty
// pool: every demand is then never satisfiable and scenarios run alone.
func (s *Suite) DevicePool(ctx context.Context) *inventory.Pool {
	s.poolOnce.Do(func() {
		w := &World{Suite: s}
		if err := w.driverPublishesAtLeast(ctx, 1); err != nil {
			klog.FromContext(ctx).Info("No devices to lease: scenarios that need devices run one at a time", "err", err)
			s.pool = inventory.NewPool(nil)
			return
		}
		devices, err := w.inventoryDevices(ctx)
		if err != nil {
			klog.FromContext(ctx).Info("No devices to lease: scenarios that need devices run one at a time", "err", err)
		}
		sl, err := s.DriverSlices(ctx)
		if err != nil {
			klog.FromContext(ctx).Info("No counter sets to lease by: scenarios that need devices run one at a time", "err", err)
		}
		s.pool = inventory.NewPool(inventory.Units(devices, inventory.CounterSets(CounterSets(sl, s.Driver.DriverName))))
	})
	return s.pool
}

// inventoryDevices are the driver's devices of the kit's DeviceClass (whole)
// and partition class (partitions), as conformance/inventory sees them.
func (w *World) inventoryDevices(ctx context.Context) ([]inventory.Device, error) {
	whole, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return nil, err
	}
	var parts []PublishedDevice
	if w.Driver.PartitionClassName != "" {
		// A missing partition class leaves the whole devices to lease; the
		// partition steps say that it is missing.
		if parts, err = w.ClassDevices(ctx, w.Driver.PartitionClassName); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
			return nil, err
		}
	}
	var shared []PublishedDevice
	if w.Driver.SharedDeviceClassName != "" {
		// As with partitions: the KEP-5075 steps say that it is missing.
		if shared, err = w.ClassDevices(ctx, w.Driver.SharedDeviceClassName); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
			return nil, err
		}
	}
	var out []inventory.Device
	for _, d := range whole {
		out = append(out, w.inventoryDevice(d, inventory.KindWhole))
	}
	for _, d := range parts {
		out = append(out, w.inventoryDevice(d, inventory.KindPartition))
	}
	for _, d := range shared {
		out = append(out, w.inventoryDevice(d, inventory.KindShared))
	}
	return out, nil
}

func (w *World) inventoryDevice(d PublishedDevice, kind inventory.Kind) inventory.Device {
	str := func(attr string) string {
		if attr == "" {
			return ""
		}
		a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, attr)
		if !ok || a.StringValue == nil {
			return ""
		}
		return *a.StringValue
	}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	for name, a := range d.Attributes {
		domain, id := observe.SplitAttribute(w.Driver.DriverName, string(name))
		attrs[resourceapi.QualifiedName(domain+"/"+id)] = a
	}
	identity := w.Driver.UUIDAttribute
	if kind == inventory.KindShared {
		identity = w.Driver.SharedIdentityAttribute
	}
	dev := inventory.Device{Kind: kind, Pool: d.Pool, Name: d.Name, Identity: str(identity), Attributes: attrs, Consumes: d.Consumes}
	if kind == inventory.KindPartition {
		dev.Parent, dev.Profile = str(w.Driver.ParentUUIDAttribute), str(w.Driver.ProfileAttribute)
	}
	return dev
}

// acquireDevices leases what the scenario's steps need. A demand the
// driver's devices can never meet makes the scenario run alone, so that its
// own steps skip or fail as they would in a run of one scenario at a time.
func (w *World) acquireDevices(ctx context.Context, sc *godog.Scenario) error {
	d := w.scenarioDemand(sc)
	if d.Empty() {
		return nil
	}
	pool := w.DevicePool(ctx)
	owner := fmt.Sprintf("scenario %q (namespace %s)", sc.Name, w.Ns)
	w.progress.waiting(sc, d)
	lease, err := pool.Acquire(ctx, owner, d)
	if errors.Is(err, inventory.ErrNeverSatisfiable) {
		klog.FromContext(ctx).V(1).Info("Running the scenario alone", "reason", err)
		lease, err = pool.Acquire(ctx, owner, inventory.Demand{Exclusive: true})
	}
	if err != nil {
		return fmt.Errorf("lease the devices the scenario needs: %w", err)
	}
	w.Lease = lease
	return nil
}

// leasedUnits are the units the scenario holds; all units of the pool when
// it holds none (a scenario whose steps need no device but look at some).
func (w *World) LeasedUnits(ctx context.Context) []inventory.Unit {
	if w.Lease != nil && len(w.Lease.Units) > 0 {
		return w.Lease.Units
	}
	return w.DevicePool(ctx).Units()
}

// leaseSelectors restrict the requests of a claim for the driver's classes
// to the scenario's leased devices (leaseSelector). Claims of a scenario
// that holds no lease are left alone.
func (w *World) leaseSelectors(spec *resourceapi.ResourceClaimSpec) {
	add := func(class string, sels *[]resourceapi.DeviceSelector) {
		if e := w.LeaseSelector(class); e != "" {
			*sels = append(*sels, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			add(r.Exactly.DeviceClassName, &r.Exactly.Selectors)
		}
		for j := range r.FirstAvailable {
			add(r.FirstAvailable[j].DeviceClassName, &r.FirstAvailable[j].Selectors)
		}
	}
}

// leaseSelector is the CEL selector that keeps devices of one of the
// driver's classes to the scenario's leased devices: whole and shared
// devices by their identity, partitions by their parent's; "" for another
// class, or when the scenario holds no lease.
func (w *World) LeaseSelector(class string) string {
	if w.Lease == nil || len(w.Lease.Units) == 0 || class == "" {
		return ""
	}
	var identities, parents []string
	for _, u := range w.Lease.Units {
		identities = append(identities, u.Parents()...)
		for _, p := range u.Partitions {
			if p.Parent != "" {
				parents = append(parents, p.Parent)
			}
		}
	}
	switch class {
	case w.Driver.DeviceClass():
		return inListSelector(w.Driver.DriverName, w.Driver.UUIDAttribute, identities)
	case w.Driver.PartitionClassName:
		return inListSelector(w.Driver.DriverName, w.Driver.ParentUUIDAttribute, parents)
	case w.Driver.SharedDeviceClassName:
		return inListSelector(w.Driver.DriverName, w.Driver.SharedIdentityAttribute, w.Lease.SharedIdentities())
	}
	return ""
}

// inListSelector matches the driver's devices whose string attribute is one
// of values.
func inListSelector(driver, attr string, values []string) string {
	quoted := make([]string, 0, len(values))
	seen := map[string]bool{}
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			quoted = append(quoted, strconv.Quote(v))
		}
	}
	return fmt.Sprintf("%s in [%s]", attributeExpr(driver, attr), strings.Join(quoted, ", "))
}

// releaseDevices gives the lease back, once the scenario's cleanup has
// released every device.
func (w *World) releaseDevices() {
	w.Lease.Release()
	w.Lease = nil
}
