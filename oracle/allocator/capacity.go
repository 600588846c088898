package allocator

import (
	"errors"
	"fmt"
	"math"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Consumable capacity (KEP-5075), written from the spec digest §7 and the
// documented upstream rounding rules: an unrequested capacity consumes the
// policy default or the whole capacity; a request is rounded up to the
// range minimum, the next step, or the next valid value; the result must
// obey the policy and fit into what is left.

var (
	errNotRepresentable = errors.New("capacity request cannot be represented in the device's range arithmetic")
	errNegativeCapacity = errors.New("capacity value is negative")
)

// capacityFits reports whether a request can be added to a device that has
// already consumed current (allocated claims) and allocating (this search).
// An error means the request cannot be evaluated (fatal, like upstream).
func capacityFits(current structured.ConsumedCapacity, req *resourceapi.CapacityRequirements, _ *bool,
	capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, allocating structured.ConsumedCapacity, fractional bool) (bool, error) {
	if (req == nil || len(req.Requests) == 0) && len(current) == 0 && len(allocating) == 0 && wholeCapacityFits(capacity) {
		return true, nil
	}
	if req != nil {
		for name := range req.Requests {
			if _, ok := capacity[name]; !ok {
				return false, nil
			}
		}
	}
	consumed, err := consumedCapacity(req, capacity, fractional)
	if err != nil {
		return false, err
	}
	for name, c := range capacity {
		q := consumed[name]
		if violatesPolicy(q, c.RequestPolicy, fractional) {
			return false, nil
		}
		total := q.DeepCopy()
		if v, ok := current[name]; ok && v != nil {
			total.Add(*v)
		}
		if v, ok := allocating[name]; ok && v != nil {
			total.Add(*v)
		}
		if total.Cmp(c.Value) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// wholeCapacityFits is the common case of capacityFits without a request
// on an unused device: without request policies, every capacity is
// consumed whole, which fits unless a value is negative (an error the
// full path reports).
func wholeCapacityFits(capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) bool {
	for _, c := range capacity {
		if c.RequestPolicy != nil || c.Value.Sign() < 0 {
			return false
		}
	}
	return true
}

// consumedCapacity resolves what one allocation of a device consumes of
// every capacity the device has.
func consumedCapacity(req *resourceapi.CapacityRequirements, capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, fractional bool) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	out := make(map[resourceapi.QualifiedName]resource.Quantity, len(capacity))
	for name, c := range capacity {
		var requested *resource.Quantity
		if req != nil {
			if v, ok := req.Requests[name]; ok {
				requested = &v
			}
		}
		q, err := resolveCapacity(requested, c, fractional)
		if err != nil {
			return nil, fmt.Errorf("capacity %q: %w", name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("capacity %q: %w", name, errNegativeCapacity)
		}
		out[name] = q
	}
	return out, nil
}

func resolveCapacity(requested *resource.Quantity, c resourceapi.DeviceCapacity, fractional bool) (resource.Quantity, error) {
	policy := c.RequestPolicy
	if requested == nil {
		if policy != nil && policy.Default != nil {
			return policy.Default.DeepCopy(), nil
		}
		return c.Value.DeepCopy(), nil
	}
	if policy == nil {
		return requested.DeepCopy(), nil
	}
	switch {
	case policy.ValidRange != nil && policy.ValidRange.Min != nil:
		return roundUpRange(requested, policy.ValidRange, fractional)
	case policy.ValidValues != nil:
		for _, v := range policy.ValidValues {
			if requested.Cmp(v) <= 0 {
				return v.DeepCopy(), nil
			}
		}
		return *requested, nil
	}
	return *requested, nil
}

func roundUpRange(requested *resource.Quantity, r *resourceapi.CapacityRequestPolicyRange, fractional bool) (resource.Quantity, error) {
	if requested.Cmp(*r.Min) < 0 {
		return r.Min.DeepCopy(), nil
	}
	if r.Step == nil {
		return *requested, nil
	}
	if useMilli(r, fractional) {
		req, err := exactMilli(*requested)
		if err != nil {
			return resource.Quantity{}, fmt.Errorf("%w: request %s is not a representable milli value", errNotRepresentable, requested.String())
		}
		step, lo := r.Step.MilliValue(), r.Min.MilliValue()
		n := ceilDiv(req-lo, step)
		if n > (math.MaxInt64-lo)/step {
			return resource.Quantity{}, fmt.Errorf("%w: rounding request %s up to the next step passes the milli-value range", errNotRepresentable, requested.String())
		}
		v := lo + step*n
		if v%1000 == 0 {
			return *resource.NewQuantity(v/1000, r.Step.Format), nil
		}
		return *resource.NewMilliQuantity(v, r.Step.Format), nil
	}
	if requested.CmpInt64(math.MaxInt64) > 0 {
		return resource.Quantity{}, fmt.Errorf("%w: request %s exceeds MaxInt64", errNotRepresentable, requested.String())
	}
	req, step, lo := requested.Value(), r.Step.Value(), r.Min.Value()
	n := ceilDiv(req-lo, step)
	if lo >= 0 && n > (math.MaxInt64-lo)/step {
		return resource.Quantity{}, fmt.Errorf("%w: rounding request %s up to the next step passes MaxInt64", errNotRepresentable, requested.String())
	}
	return *resource.NewQuantity(lo+step*n, r.Step.Format), nil
}

func ceilDiv(a, b int64) int64 {
	n := a / b
	if a%b != 0 {
		n++
	}
	return n
}

func violatesPolicy(q resource.Quantity, policy *resourceapi.CapacityRequestPolicy, fractional bool) bool {
	if policy == nil {
		return false
	}
	if policy.Default != nil && q == *policy.Default {
		return false
	}
	switch {
	case policy.ValidRange != nil:
		r := policy.ValidRange
		if r.Max != nil && q.Cmp(*r.Max) > 0 {
			return true
		}
		if r.Step != nil {
			var v, step, lo int64
			if useMilli(r, fractional) {
				var err error
				if v, err = exactMilli(q); err != nil {
					return true
				}
				step, lo = r.Step.MilliValue(), r.Min.MilliValue()
			} else {
				v, step, lo = q.Value(), r.Step.Value(), r.Min.Value()
			}
			if (v-lo)%step != 0 {
				return true
			}
		}
		return false
	case len(policy.ValidValues) > 0:
		for _, v := range policy.ValidValues {
			if q.Cmp(v) == 0 {
				return false
			}
		}
		return true
	}
	return false
}

func useMilli(r *resourceapi.CapacityRequestPolicyRange, fractional bool) bool {
	if !fractional {
		return false
	}
	for i, q := range []*resource.Quantity{r.Min, r.Max, r.Step} {
		if q == nil {
			continue
		}
		v, err := exactMilli(*q)
		if err != nil {
			return false
		}
		if i == 2 && v < 1 {
			return false
		}
	}
	return true
}

func exactMilli(q resource.Quantity) (int64, error) {
	m := q.MilliValue()
	if q.Cmp(*resource.NewMilliQuantity(m, q.Format)) != 0 {
		return 0, errors.New("value must be representable in milli units")
	}
	return m, nil
}
