package poolstatus

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	resourcealpha "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The kit's own answer to a ResourcePoolStatusRequest (KEP-5677,
// dra-1.37-spec.md §14): what the pools of a driver hold, computed from the
// ResourceSlices, ResourceClaims and DeviceTaintRules the API server stored,
// by the rules of the resourcepoolstatusrequest controller of
// kube-controller-manager 1.37.2. The steps compare the controller's status
// with it, never the controller's numbers with themselves.

// Prefixes of the views' validationError; only the prefix is compared, the
// rest names the first offending device, which depends on list order.
const (
	poolErrPartitionTypeMissing = "PartitionTypeMissing:"
	poolErrPartitionCost        = "PartitionCostMismatch:"
	poolErrPartitionOverCap     = "PartitionSummaryOverCap:"
	poolErrShareableOverCap     = "ShareableSummaryOverCap:"
	// maxPoolStatusListItems is the +k8s:maxItems of the views' lists.
	maxPoolStatusListItems = 32
)

// poolSnapshot is what the API server stored that a pool's status depends
// on.
type poolSnapshot struct {
	Slices []resourceapi.ResourceSlice
	Claims []resourceapi.ResourceClaim
	Rules  []resourceapi.DeviceTaintRule
}

// expectedPool is one pool as the kit computes it.
type expectedPool struct {
	Driver, Pool string
	Generation   int64
	// Incomplete: fewer slices of the newest generation than it announces;
	// the controller reports no counts for such a pool.
	Incomplete                               bool
	Slices                                   int32
	Total, Allocated, Unavailable, Available int32
	NodeName                                 string
	Partitions                               []resourcealpha.PartitionTypeStatus
	Shareable                                *resourcealpha.ShareableSummaryStatus
	ViewError                                string // a prefix above, "" for none
	allocatedNames                           map[string]bool
}

// AllocatedDevice says whether the kit counts the device allocated.
func (p expectedPool) AllocatedDevice(name string) bool { return p.allocatedNames[name] }

// poolDevice is a device of the newest generation of a pool.
type poolDevice struct {
	device        resourceapi.Device
	partitionAttr string
}

// expectedPools computes the pools of driver (only pool, when not "") in
// the snapshot, sorted by driver and pool name: per pool only the slices of
// the newest generation count; devices with a NoSchedule or NoExecute taint,
// their own or a DeviceTaintRule's, are unavailable (allocated or not, as
// the controller counts them); a device is allocated when a claim's result
// without adminAccess names it; defaultAttr ("" for none) is the request's
// defaultPartitionTypeAttribute.
func expectedPools(s poolSnapshot, driver, pool, defaultAttr string) []expectedPool {
	newest := map[string]int64{}
	for _, sl := range s.Slices {
		if sl.Spec.Driver == driver && (pool == "" || sl.Spec.Pool.Name == pool) {
			if g, ok := newest[sl.Spec.Pool.Name]; !ok || sl.Spec.Pool.Generation > g {
				newest[sl.Spec.Pool.Name] = sl.Spec.Pool.Generation
			}
		}
	}
	type building struct {
		exp      expectedPool
		node     string
		mixed    bool
		want     int64
		devices  []poolDevice
		counters []resourceapi.CounterSet
	}
	pools := map[string]*building{}
	for _, sl := range s.Slices {
		g, ok := newest[sl.Spec.Pool.Name]
		if sl.Spec.Driver != driver || !ok || sl.Spec.Pool.Generation != g {
			continue
		}
		node := ptr.Deref(sl.Spec.NodeName, "")
		b := pools[sl.Spec.Pool.Name]
		if b == nil {
			b = &building{exp: expectedPool{Driver: driver, Pool: sl.Spec.Pool.Name, Generation: g}, node: node, want: sl.Spec.Pool.ResourceSliceCount}
			pools[sl.Spec.Pool.Name] = b
		} else if node != b.node {
			b.mixed = true
		}
		b.exp.Slices++
		attr := ""
		if sl.Spec.PartitionTypeAttribute != nil {
			attr = string(*sl.Spec.PartitionTypeAttribute)
		}
		for _, d := range sl.Spec.Devices {
			b.exp.Total++
			if deviceUnavailable(driver, sl.Spec.Pool.Name, d, s.Rules) {
				b.exp.Unavailable++
			}
			b.devices = append(b.devices, poolDevice{device: d, partitionAttr: attr})
		}
		b.counters = append(b.counters, sl.Spec.SharedCounters...)
	}
	inUse, consumed := allocatedInPools(s.Claims, driver)
	out := make([]expectedPool, 0, len(pools))
	for name, b := range pools {
		e := b.exp
		if b.node != "" && !b.mixed {
			e.NodeName = b.node
		}
		if int64(e.Slices) < b.want {
			e.Incomplete = true
			e.Slices, e.Total, e.Unavailable = 0, 0, 0
			out = append(out, e)
			continue
		}
		e.allocatedNames = inUse[name]
		e.Allocated = int32(len(inUse[name]))
		e.Available = max(0, e.Total-e.Allocated-e.Unavailable)
		resolvePartitionAttrs(driver, defaultAttr, b.devices)
		e.Partitions, e.Shareable, e.ViewError = poolViews(driver, b.devices, b.counters, inUse[name], consumed[name])
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// deviceUnavailable: a NoSchedule or NoExecute taint of the device or of a
// DeviceTaintRule whose selector (nil matches nothing) names it.
func deviceUnavailable(driver, pool string, d resourceapi.Device, rules []resourceapi.DeviceTaintRule) bool {
	blocks := func(e resourceapi.DeviceTaintEffect) bool {
		return e == resourceapi.DeviceTaintEffectNoSchedule || e == resourceapi.DeviceTaintEffectNoExecute
	}
	for _, t := range d.Taints {
		if blocks(t.Effect) {
			return true
		}
	}
	for _, r := range rules {
		sel := r.Spec.DeviceSelector
		if !blocks(r.Spec.Taint.Effect) || sel == nil {
			continue
		}
		if ptr.Deref(sel.Driver, driver) == driver && ptr.Deref(sel.Pool, pool) == pool && ptr.Deref(sel.Device, d.Name) == d.Name {
			return true
		}
	}
	return false
}

// allocatedInPools returns, per pool of driver, the names of the devices
// that claims hold (adminAccess results observe, they do not count) and the
// capacity the claims consume.
func allocatedInPools(claims []resourceapi.ResourceClaim, driver string) (map[string]map[string]bool, map[string]map[resourceapi.QualifiedName]resource.Quantity) {
	inUse := map[string]map[string]bool{}
	consumed := map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != driver || ptr.Deref(r.AdminAccess, false) {
				continue
			}
			if inUse[r.Pool] == nil {
				inUse[r.Pool] = map[string]bool{}
				consumed[r.Pool] = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			inUse[r.Pool][r.Device] = true
			for name, q := range r.ConsumedCapacity {
				sum := consumed[r.Pool][name].DeepCopy()
				sum.Add(q)
				consumed[r.Pool][name] = sum
			}
		}
	}
	return inUse, consumed
}

// resolvePartitionAttrs gives the devices of a pool whose slice names no
// partition type attribute the request's default, unless some slice of
// the pool names one.
func resolvePartitionAttrs(driver, defaultAttr string, devices []poolDevice) {
	if defaultAttr == "" || slices.ContainsFunc(devices, func(d poolDevice) bool { return d.partitionAttr != "" }) {
		return
	}
	for i := range devices {
		devices[i].partitionAttr = defaultAttr
	}
}

// partitionType is the string value of the device's attribute attr (fully
// qualified; a bare name in the driver's domain counts too).
func partitionType(driver string, d resourceapi.Device, attr string) (string, bool) {
	a, ok := d.Attributes[resourceapi.QualifiedName(attr)]
	if !ok {
		if bare, cut := strings.CutPrefix(attr, driver+"/"); cut {
			a, ok = d.Attributes[resourceapi.QualifiedName(bare)]
		}
	}
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}

// poolViews computes partitionSummary and shareableSummary of a complete
// pool, or the prefix of the validationError that replaces the partition
// summary (the shareable one stays unless it is the one in error).
func poolViews(driver string, devices []poolDevice, counters []resourceapi.CounterSet, inUse map[string]bool, consumed map[resourceapi.QualifiedName]resource.Quantity) ([]resourcealpha.PartitionTypeStatus, *resourcealpha.ShareableSummaryStatus, string) {
	var parts []resourcealpha.PartitionTypeStatus
	viewErr := ""
	if slices.ContainsFunc(devices, func(d poolDevice) bool { return d.partitionAttr != "" }) {
		if len(counters) == 0 {
			viewErr = poolErrPartitionTypeMissing
		} else {
			parts, viewErr = partitionSummary(driver, devices, counters, inUse)
		}
	}
	shared, shErr := shareableSummary(devices, inUse, consumed)
	if viewErr == "" {
		viewErr = shErr
	}
	if viewErr != "" {
		parts = nil
	}
	return parts, shared, viewErr
}

// counterKey identifies what a device draws: counter set, counter, amount.
func counterKey(cost []resourceapi.DeviceCounterConsumption) string {
	var parts []string
	for _, cc := range cost {
		for name, c := range cc.Counters {
			parts = append(parts, cc.CounterSet+"/"+name+"="+c.Value.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// partitionSummary groups counter-consuming devices by (attribute, type):
// every device of a group must draw the same counters of the same sets;
// allocatable is how many of the group's free devices still fit in what
// the allocated devices left of the counters, each group measured alone.
// All devices of a group cost the same, so the count does not depend on the
// order the controller meets them in.
func partitionSummary(driver string, devices []poolDevice, counters []resourceapi.CounterSet, inUse map[string]bool) ([]resourcealpha.PartitionTypeStatus, string) {
	type key struct{ attr, typ string }
	type group struct {
		total int32
		cost  string
		fresh []resourceapi.Device
	}
	groups := map[key]*group{}
	for _, pd := range devices {
		d := pd.device
		if len(d.ConsumesCounters) == 0 || pd.partitionAttr == "" {
			continue
		}
		typ, ok := partitionType(driver, d, pd.partitionAttr)
		if !ok {
			return nil, poolErrPartitionTypeMissing
		}
		k := key{pd.partitionAttr, typ}
		g := groups[k]
		if g == nil {
			g = &group{cost: counterKey(d.ConsumesCounters)}
			groups[k] = g
		} else if counterKey(d.ConsumesCounters) != g.cost {
			return nil, poolErrPartitionCost
		}
		g.total++
		if !inUse[d.Name] {
			g.fresh = append(g.fresh, d)
		}
	}
	left := map[string]map[string]resource.Quantity{}
	for _, cs := range counters {
		if left[cs.Name] == nil {
			left[cs.Name] = map[string]resource.Quantity{}
		}
		for name, c := range cs.Counters {
			left[cs.Name][name] = c.Value.DeepCopy()
		}
	}
	for _, pd := range devices {
		if inUse[pd.device.Name] {
			draw(left, pd.device.ConsumesCounters)
		}
	}
	out := make([]resourcealpha.PartitionTypeStatus, 0, len(groups))
	for k, g := range groups {
		avail := cloneCounterMap(left)
		n := int32(0)
		for _, d := range g.fresh {
			if fits(avail, d.ConsumesCounters) {
				n++
				draw(avail, d.ConsumesCounters)
			}
		}
		out = append(out, resourcealpha.PartitionTypeStatus{Attribute: k.attr, Type: k.typ, Total: ptr.To(g.total), Allocatable: ptr.To(n)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Attribute != out[j].Attribute {
			return out[i].Attribute < out[j].Attribute
		}
		return out[i].Type < out[j].Type
	})
	if len(out) > maxPoolStatusListItems {
		return nil, poolErrPartitionOverCap
	}
	return out, ""
}

func fits(avail map[string]map[string]resource.Quantity, cost []resourceapi.DeviceCounterConsumption) bool {
	for _, cc := range cost {
		for name, c := range cc.Counters {
			have, ok := avail[cc.CounterSet][name]
			if !ok || have.Cmp(c.Value) < 0 {
				return false
			}
		}
	}
	return true
}

func draw(avail map[string]map[string]resource.Quantity, cost []resourceapi.DeviceCounterConsumption) {
	for _, cc := range cost {
		for name, c := range cc.Counters {
			if have, ok := avail[cc.CounterSet][name]; ok {
				have.Sub(c.Value)
				avail[cc.CounterSet][name] = have
			}
		}
	}
}

func cloneCounterMap(src map[string]map[string]resource.Quantity) map[string]map[string]resource.Quantity {
	out := make(map[string]map[string]resource.Quantity, len(src))
	for set, cs := range src {
		out[set] = make(map[string]resource.Quantity, len(cs))
		for name, q := range cs {
			out[set][name] = q.DeepCopy()
		}
	}
	return out
}

// shareableSummary counts the devices that allow multiple allocations:
// fully available when no claim holds them, partially otherwise, and sums
// their capacities and what the claims consume of them; nil when the pool
// has none.
func shareableSummary(devices []poolDevice, inUse map[string]bool, consumed map[resourceapi.QualifiedName]resource.Quantity) (*resourcealpha.ShareableSummaryStatus, string) {
	var full, partial int32
	total := map[resourceapi.QualifiedName]resource.Quantity{}
	any := false
	for _, pd := range devices {
		d := pd.device
		if !ptr.Deref(d.AllowMultipleAllocations, false) {
			continue
		}
		any = true
		if inUse[d.Name] {
			partial++
		} else {
			full++
		}
		for name, c := range d.Capacity {
			sum := total[name].DeepCopy()
			sum.Add(c.Value)
			total[name] = sum
		}
	}
	if !any {
		return nil, ""
	}
	names := make([]string, 0, len(total))
	for name := range total {
		names = append(names, string(name))
	}
	sort.Strings(names)
	if len(names) > maxPoolStatusListItems {
		return nil, poolErrShareableOverCap
	}
	out := &resourcealpha.ShareableSummaryStatus{FullyAvailableDevices: ptr.To(full), PartiallyAvailableDevices: ptr.To(partial)}
	for _, name := range names {
		t := total[resourceapi.QualifiedName(name)]
		used := consumed[resourceapi.QualifiedName(name)].DeepCopy()
		avail := t.DeepCopy()
		avail.Sub(used)
		if avail.Sign() < 0 {
			avail = *resource.NewQuantity(0, t.Format)
		}
		out.Capacity = append(out.Capacity, resourcealpha.ShareableCapacityStatus{Name: name, Total: ptr.To(t), Consumed: ptr.To(used), Available: ptr.To(avail)})
	}
	return out, ""
}

// comparePool lists where the controller's status of a pool differs from
// the kit's.
func comparePool(got resourcealpha.PoolStatus, want expectedPool) []string {
	var diffs []string
	id := want.Pool
	add := func(format string, args ...any) { diffs = append(diffs, "pool "+id+": "+fmt.Sprintf(format, args...)) }
	if got.Driver != want.Driver || got.PoolName != want.Pool {
		add("reported as %s/%s", got.Driver, got.PoolName)
	}
	if got.Generation != want.Generation {
		add("generation %d, the stored slices' newest is %d", got.Generation, want.Generation)
	}
	if n := ptr.Deref(got.NodeName, ""); n != want.NodeName {
		add("nodeName %q, the stored slices say %q", n, want.NodeName)
	}
	if want.Incomplete {
		if got.ValidationError == nil || got.TotalDevices != nil {
			add("incomplete at generation %d, expected a validationError and no counts, got validationError %q, totalDevices %s", want.Generation, ptr.Deref(got.ValidationError, ""), intString(got.TotalDevices))
		}
		return diffs
	}
	counts := []struct {
		Name string
		got  *int32
		want int32
	}{
		{"resourceSliceCount", got.ResourceSliceCount, want.Slices},
		{"totalDevices", got.TotalDevices, want.Total},
		{"allocatedDevices", got.AllocatedDevices, want.Allocated},
		{"unavailableDevices", got.UnavailableDevices, want.Unavailable},
		{"availableDevices", got.AvailableDevices, want.Available},
	}
	for _, c := range counts {
		if c.got == nil || *c.got != c.want {
			add("%s %s, the stored objects give %d", c.Name, intString(c.got), c.want)
		}
	}
	if v := ptr.Deref(got.ValidationError, ""); want.ViewError == "" && v != "" || want.ViewError != "" && !strings.HasPrefix(v, want.ViewError) {
		add("validationError %q, expected %s", v, orNone(want.ViewError))
	}
	if g, w := partitionsString(got.PartitionSummary), partitionsString(want.Partitions); g != w {
		add("partitionSummary %s, the stored objects give %s", g, w)
	}
	if g, w := shareableString(got.ShareableSummary), shareableString(want.Shareable); g != w {
		add("shareableSummary %s, the stored objects give %s", g, w)
	}
	return diffs
}

func intString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s + "..."
}

// partitionsString renders a partition summary as "attr type=total/allocatable, ...".
func partitionsString(parts []resourcealpha.PartitionTypeStatus) string {
	if len(parts) == 0 {
		return "none"
	}
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprintf("%s %s=%s/%s", p.Attribute, p.Type, intString(p.Total), intString(p.Allocatable))
	}
	return strings.Join(s, ", ")
}

// shareableString renders a shareable summary with canonical quantities.
func shareableString(s *resourcealpha.ShareableSummaryStatus) string {
	if s == nil {
		return "none"
	}
	q := func(p *resource.Quantity) string {
		if p == nil {
			return "unset"
		}
		return p.AsDec().String()
	}
	out := fmt.Sprintf("%s fully, %s partially available", intString(s.FullyAvailableDevices), intString(s.PartiallyAvailableDevices))
	for _, c := range s.Capacity {
		out += fmt.Sprintf("; %s total %s consumed %s available %s", c.Name, q(c.Total), q(c.Consumed), q(c.Available))
	}
	return out
}

// String renders the pool for messages and for telling two computations
// apart.
func (p expectedPool) String() string {
	if p.Incomplete {
		return fmt.Sprintf("%s/%s generation %d incomplete", p.Driver, p.Pool, p.Generation)
	}
	return fmt.Sprintf("%s/%s generation %d: %d slices, node %q, %d devices, %d allocated, %d unavailable, %d available, partitions %s, shareable %s, error %s",
		p.Driver, p.Pool, p.Generation, p.Slices, p.NodeName, p.Total, p.Allocated, p.Unavailable, p.Available,
		partitionsString(p.Partitions), shareableString(p.Shareable), orNone(p.ViewError))
}
