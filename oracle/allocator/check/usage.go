package check

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// shareIDPattern is a lowercase RFC 4122 UUID.
var shareIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (d *device) shared(features featureSet) bool {
	return features.ConsumableCapacity && isTrue(d.dev.AllowMultipleAllocations)
}

func (d *device) id() structured.DeviceID {
	return structured.MakeDeviceID(d.key.driver, d.key.pool, d.key.device)
}

// checkSharing: exclusive devices are used at most once (admin access
// aside); shared devices carry unique share IDs and fit their capacity.
func (c *checker) checkSharing() {
	state := c.in.AllocatedState
	byDevice := map[deviceKey][]use{}
	var order []deviceKey
	for _, u := range c.uses {
		if _, seen := byDevice[u.dev.key]; !seen {
			order = append(order, u.dev.key)
		}
		byDevice[u.dev.key] = append(byDevice[u.dev.key], u)
	}
	for _, key := range order {
		uses := byDevice[key]
		dev := uses[0].dev
		if !dev.shared(c.in.Features) {
			taken := state.AllocatedDevices.Has(dev.id())
			for _, u := range uses {
				if u.result.ShareID != nil {
					c.fail(u.claim, u.result.Request, key.String(), RuleShareID, "shareID set on a device that does not allow multiple allocations")
				}
				if isTrue(u.result.AdminAccess) {
					continue
				}
				if taken {
					c.fail(u.claim, u.result.Request, key.String(), RuleInUse, "device is already allocated")
				}
				taken = true
			}
			continue
		}
		seen := map[types.UID]bool{}
		consumed := map[resourceapi.QualifiedName]resource.Quantity{}
		for name, q := range state.AggregatedCapacity[dev.id()] {
			if q != nil {
				consumed[name] = q.DeepCopy()
			}
		}
		for _, u := range uses {
			if isTrue(u.result.AdminAccess) {
				continue
			}
			id := u.result.ShareID
			switch {
			case id == nil:
				c.fail(u.claim, u.result.Request, key.String(), RuleShareID, "no shareID on an allocation of a shared device")
			case !shareIDPattern.MatchString(string(*id)):
				c.fail(u.claim, u.result.Request, key.String(), RuleShareID, "shareID %q is not a lowercase UUID", *id)
			case seen[*id] || state.AllocatedSharedDeviceIDs.Has(structured.MakeSharedDeviceID(dev.id(), id)):
				c.fail(u.claim, u.result.Request, key.String(), RuleShareID, "shareID %s is used twice", *id)
			}
			if id != nil {
				seen[*id] = true
			}
			for name, q := range u.result.ConsumedCapacity {
				sum := consumed[name]
				sum.Add(q)
				consumed[name] = sum
			}
		}
		for _, name := range slices.Sorted(maps.Keys(dev.dev.Capacity)) {
			limit := dev.dev.Capacity[name].Value
			if sum, ok := consumed[name]; ok && sum.Cmp(limit) > 0 {
				u := uses[len(uses)-1]
				c.fail(u.claim, u.result.Request, key.String(), RuleCapacity, "capacity %s: %s consumed in total, the device has %s", name, sum.String(), limit.String())
			}
		}
	}
}

// checkCapacityRequest checks the consumedCapacity of one allocation of a
// shared device: every capacity listed, each amount what the request and
// the capacity's request policy make of it.
func (c *checker) checkCapacityRequest(claimName string, spec reqSpec, dev *device, r *resourceapi.DeviceRequestAllocationResult) {
	if !dev.shared(c.in.Features) || isTrue(r.AdminAccess) {
		return
	}
	name := dev.key.String()
	for _, capName := range slices.Sorted(maps.Keys(dev.dev.Capacity)) {
		capacity := dev.dev.Capacity[capName]
		got, ok := r.ConsumedCapacity[capName]
		if !ok {
			c.fail(claimName, spec.name, name, RuleCapacity, "consumedCapacity lacks capacity %s", capName)
			continue
		}
		want, requested := spec.capacity[capName]
		expect, ok := expectedConsumption(capacity, want, requested, c.in.Features.FractionalCapacityRange)
		if !ok {
			c.fail(claimName, spec.name, name, RuleCapacity, "capacity %s: request %s cannot be met under the request policy", capName, want.String())
			continue
		}
		if got.Cmp(expect) != 0 {
			c.fail(claimName, spec.name, name, RuleCapacity, "capacity %s: consumed %s, the request and policy give %s", capName, got.String(), expect.String())
		}
	}
	for capName := range r.ConsumedCapacity {
		if _, ok := dev.dev.Capacity[capName]; !ok {
			c.fail(claimName, spec.name, name, RuleCapacity, "consumedCapacity names %s, which the device does not have", capName)
		}
	}
}

// expectedConsumption is what one allocation consumes of a capacity: an
// unrequested capacity takes the policy default or, without a policy, all of
// it; a requested amount is rounded up to the policy's next valid value.
// false: the policy cannot satisfy the request.
func expectedConsumption(capacity resourceapi.DeviceCapacity, want resource.Quantity, requested, fractional bool) (resource.Quantity, bool) {
	policy := capacity.RequestPolicy
	if !requested {
		if policy != nil && policy.Default != nil {
			return *policy.Default, true
		}
		return capacity.Value, true
	}
	if policy == nil {
		return want, want.Cmp(capacity.Value) <= 0
	}
	if len(policy.ValidValues) > 0 {
		for _, v := range policy.ValidValues {
			if v.Cmp(want) >= 0 {
				return v, true
			}
		}
		return resource.Quantity{}, false
	}
	if r := policy.ValidRange; r != nil && r.Min != nil {
		// Without FractionalCapacityRange, or when the range has no
		// fractional bound, the arithmetic is on whole units, each
		// quantity rounded up; otherwise on milli-units.
		milli := fractional && (isFractional(r.Min) || isFractional(r.Max) || isFractional(r.Step))
		wantUnits, minUnits := units(want, milli), units(*r.Min, milli)
		outUnits := new(big.Int).Set(wantUnits)
		if outUnits.Cmp(minUnits) < 0 {
			outUnits.Set(minUnits)
		}
		if r.Step != nil {
			if step := units(*r.Step, milli); step.Sign() > 0 && outUnits.Cmp(minUnits) > 0 {
				// min + ceil((out-min)/step)*step
				over := new(big.Int).Sub(outUnits, minUnits)
				over.Add(over, step).Sub(over, big.NewInt(1))
				over.Quo(over, step).Mul(over, step)
				outUnits.Add(minUnits, over)
			}
		}
		if r.Max != nil && outUnits.Cmp(units(*r.Max, milli)) > 0 {
			return resource.Quantity{}, false
		}
		suffix := ""
		if milli {
			suffix = "m"
		}
		out, err := resource.ParseQuantity(outUnits.String() + suffix)
		if err != nil {
			return resource.Quantity{}, false
		}
		return out, out.Cmp(capacity.Value) <= 0
	}
	return want, want.Cmp(capacity.Value) <= 0
}

func isFractional(q *resource.Quantity) bool {
	if q == nil {
		return false
	}
	r := ratOf(*q)
	return r != nil && !r.IsInt()
}

// ratOf is the exact value of a quantity (nil if unparsable). It works on a
// copy: AsDec converts a Quantity in place, and the checker must not modify
// its input.
func ratOf(q resource.Quantity) *big.Rat {
	c := q.DeepCopy()
	r, ok := new(big.Rat).SetString(c.AsDec().String())
	if !ok {
		return nil
	}
	return r
}

// units is a quantity in whole units or milli-units, rounded up.
func units(q resource.Quantity, milli bool) *big.Int {
	r := ratOf(q)
	if r == nil {
		return new(big.Int)
	}
	if milli {
		r.Mul(r, big.NewRat(1000, 1))
	}
	// ceil(num/den) for den > 0
	num, den := r.Num(), r.Denom()
	out, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Sign() > 0 {
		out.Add(out, big.NewInt(1))
	}
	return out
}

func lookupCapacity(d *device, name resourceapi.QualifiedName) (resourceapi.DeviceCapacity, bool) {
	if c, ok := d.dev.Capacity[name]; ok {
		return c, true
	}
	domain, id, found := strings.Cut(string(name), "/")
	if found && domain == d.key.driver {
		c, ok := d.dev.Capacity[resourceapi.QualifiedName(id)]
		return c, ok
	}
	return resourceapi.DeviceCapacity{}, false
}

// checkCounters: per pool and counter, what all allocated devices consume
// stays within the counter set's value.
func (c *checker) checkCounters() {
	if !c.in.Features.PartitionableDevices {
		return
	}
	state := c.in.AllocatedState
	consumers := map[deviceKey]*device{}
	inBatch := map[deviceKey]use{}
	addID := func(id structured.DeviceID) {
		p := c.pools[poolKey{id.Driver.String(), id.Pool.String()}]
		if p == nil {
			return
		}
		if d := p.devices[id.Device.String()]; d != nil {
			consumers[d.key] = d
		}
	}
	for id := range state.AllocatedDevices {
		addID(id)
	}
	for id := range state.AllocatedSharedDeviceIDs {
		addID(id.GetDeviceID())
	}
	for _, u := range c.uses {
		if isTrue(u.result.AdminAccess) {
			continue
		}
		consumers[u.dev.key] = u.dev
		if _, ok := inBatch[u.dev.key]; !ok {
			inBatch[u.dev.key] = u
		}
	}
	type counterKey struct {
		pool      poolKey
		set, name string
	}
	sums := map[counterKey]*resource.Quantity{}
	blame := map[counterKey]use{}
	for _, key := range slices.SortedFunc(maps.Keys(consumers), func(a, b deviceKey) int { return strings.Compare(a.String(), b.String()) }) {
		d := consumers[key]
		for _, cc := range d.dev.ConsumesCounters {
			for name, counter := range cc.Counters {
				k := counterKey{d.pool.key, cc.CounterSet, name}
				if sums[k] == nil {
					sums[k] = &resource.Quantity{}
				}
				sums[k].Add(counter.Value)
				if u, ok := inBatch[key]; ok {
					if _, blamed := blame[k]; !blamed {
						blame[k] = u
					}
				}
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(sums), func(a, b counterKey) int {
		return strings.Compare(a.pool.driver+"/"+a.pool.pool+"/"+a.set+"/"+a.name, b.pool.driver+"/"+b.pool.pool+"/"+b.set+"/"+b.name)
	}) {
		u, ok := blame[k]
		if !ok {
			continue
		}
		limit, ok := c.pools[k.pool].counters[k.set][k.name]
		if !ok || sums[k].Cmp(limit) > 0 {
			c.fail(u.claim, u.result.Request, u.dev.key.String(), RuleCounters,
				"pool %s counter set %s counter %s: %s consumed, %s available", k.pool.pool, k.set, k.name, sums[k].String(), limit.String())
		}
	}
}

// checkConstraints checks matchAttribute and distinctAttribute.
func (c *checker) checkConstraints(claimName string, constraints []resourceapi.DeviceConstraint, uses []use) {
	for i, con := range constraints {
		var members []use
		for _, u := range uses {
			base, _, _ := strings.Cut(u.result.Request, "/")
			if len(con.Requests) == 0 || slices.Contains(con.Requests, base) || slices.Contains(con.Requests, u.result.Request) {
				members = append(members, u)
			}
		}
		if attr := con.MatchAttribute; attr != nil {
			var common map[string]bool
			for _, u := range members {
				values, ok, err := c.constraintValues(u, *attr)
				if err != nil {
					c.fail(claimName, u.result.Request, u.dev.key.String(), RuleMatchAttribute, "constraint %d: %v", i, err)
					continue
				}
				if !ok {
					c.fail(claimName, u.result.Request, u.dev.key.String(), RuleMatchAttribute, "constraint %d: device lacks attribute %s", i, *attr)
					continue
				}
				if common == nil {
					common = map[string]bool{}
					for _, v := range values {
						common[v] = true
					}
					continue
				}
				next := map[string]bool{}
				for _, v := range values {
					if common[v] {
						next[v] = true
					}
				}
				if len(next) == 0 {
					c.fail(claimName, u.result.Request, u.dev.key.String(), RuleMatchAttribute, "constraint %d: attribute %s %v does not match the other devices' %v", i, *attr, values, slices.Sorted(maps.Keys(common)))
					continue
				}
				common = next
			}
		}
		if attr := con.DistinctAttribute; attr != nil {
			owner := map[string]use{}
			for _, u := range members {
				values, ok, err := c.constraintValues(u, *attr)
				if err != nil {
					c.fail(claimName, u.result.Request, u.dev.key.String(), RuleDistinctAttribute, "constraint %d: %v", i, err)
					continue
				}
				if !ok {
					c.fail(claimName, u.result.Request, u.dev.key.String(), RuleDistinctAttribute, "constraint %d: device lacks attribute %s", i, *attr)
					continue
				}
				for _, v := range values {
					if prev, dup := owner[v]; dup {
						c.fail(claimName, u.result.Request, u.dev.key.String(), RuleDistinctAttribute, "constraint %d: attribute %s value %s also on %s", i, *attr, v, prev.dev.key)
						break
					}
				}
				for _, v := range values {
					owner[v] = u
				}
			}
		}
	}
}

// constraintValues returns the value set a constraint compares for one
// result device: the request's derived attribute of that name
// (DerivedAttributes feature), else the device's attribute.
func (c *checker) constraintValues(u use, name resourceapi.FullyQualifiedName) ([]string, bool, error) {
	lists := c.in.Features.ListTypeAttributes
	if c.in.Features.DerivedAttributes {
		for _, da := range u.derived {
			if da.Name != name {
				continue
			}
			prog := cel.GetCompiler(cel.Features{
				EnableConsumableCapacity: c.in.Features.ConsumableCapacity,
				EnableListTypeAttributes: lists,
			}).CompileCELExpression(da.Expression, cel.Options{DerivedAttribute: true})
			if prog.Error != nil {
				return nil, false, fmt.Errorf("derived attribute %s: CEL compile error: %v", name, prog.Error)
			}
			attr, _, err := prog.EvaluateDerivedAttribute(c.ctx, cel.Device{
				Driver:                   u.dev.key.driver,
				AllowMultipleAllocations: u.dev.dev.AllowMultipleAllocations,
				Attributes:               u.dev.dev.Attributes,
				Capacity:                 u.dev.dev.Capacity,
			})
			if err != nil {
				return nil, false, fmt.Errorf("derived attribute %s: CEL runtime error: %w", name, err)
			}
			if attr == nil {
				return nil, false, nil
			}
			values, ok := valueSet(*attr, lists)
			return values, ok, nil
		}
	}
	values, ok := attributeValues(u.dev, name, lists)
	return values, ok, nil
}

// attributeValues returns a device attribute as a set of typed values; a
// scalar is a one-element set. List values count only with lists enabled.
func attributeValues(d *device, name resourceapi.FullyQualifiedName, lists bool) ([]string, bool) {
	attr, ok := d.dev.Attributes[resourceapi.QualifiedName(name)]
	if !ok {
		domain, id, found := strings.Cut(string(name), "/")
		if !found || domain != d.key.driver {
			return nil, false
		}
		if attr, ok = d.dev.Attributes[resourceapi.QualifiedName(id)]; !ok {
			return nil, false
		}
	}
	return valueSet(attr, lists)
}

// valueSet is an attribute's value as a set of typed strings.
func valueSet(attr resourceapi.DeviceAttribute, lists bool) ([]string, bool) {
	switch {
	case attr.IntValue != nil:
		return []string{"int:" + strconv.FormatInt(*attr.IntValue, 10)}, true
	case attr.BoolValue != nil:
		return []string{"bool:" + strconv.FormatBool(*attr.BoolValue)}, true
	case attr.StringValue != nil:
		return []string{"string:" + *attr.StringValue}, true
	case attr.VersionValue != nil:
		return []string{"version:" + *attr.VersionValue}, true
	}
	if !lists {
		return nil, false
	}
	var out []string
	for _, v := range attr.IntValues {
		out = append(out, "int:"+strconv.FormatInt(v, 10))
	}
	for _, v := range attr.BoolValues {
		out = append(out, "bool:"+strconv.FormatBool(v))
	}
	for _, v := range attr.StringValues {
		out = append(out, "string:"+v)
	}
	for _, v := range attr.VersionValues {
		out = append(out, "version:"+v)
	}
	return out, len(out) > 0
}

// untolerated returns the first NoSchedule or NoExecute taint that no
// toleration tolerates, or nil.
func untolerated(taints []resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) *resourceapi.DeviceTaint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != resourceapi.DeviceTaintEffectNoSchedule && t.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol resourceapi.DeviceToleration) bool { return tolerates(tol, t) }) {
			return t
		}
	}
	return nil
}

func tolerates(tol resourceapi.DeviceToleration, t *resourceapi.DeviceTaint) bool {
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	switch tol.Operator {
	case resourceapi.DeviceTolerationOpExists:
		return true
	case resourceapi.DeviceTolerationOpEqual, "":
		return tol.Value == t.Value
	}
	return false
}
