package capacity

import (
	"fmt"
	"math"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// capacityPolicy is one consumable capacity of a shared device (KEP-5075)
// with its request policy, in milli-units, and what the spec says a request
// for an amount of it consumes (dra-1.37-spec.md §7, behaviour 5). The kit
// computes what it expects the scheduler to record; it never asks the
// driver.
type capacityPolicy struct {
	Name resourceapi.QualifiedName
	// value is the device's capacity.
	value int64
	// def is the policy's default; full says the request policy gives no
	// default, so a request without an amount takes the whole capacity.
	def  int64
	full bool
	// values are validValues, ascending; empty without.
	values []int64
	// min, max (0: none) and step (0: none) are validRange's; hasRange
	// says there is one.
	hasRange       bool
	min, max, step int64
}

// newCapacityPolicy reads a published capacity. Quantities too large for
// milli-units in an int64 are refused.
func newCapacityPolicy(name resourceapi.QualifiedName, c resourceapi.DeviceCapacity) (capacityPolicy, error) {
	p := capacityPolicy{Name: name, full: true}
	var err error
	milli := func(q *resource.Quantity) int64 {
		if q == nil || err != nil {
			return 0
		}
		if q.Cmp(*resource.NewQuantity(math.MaxInt64/1000, resource.DecimalSI)) > 0 {
			err = fmt.Errorf("capacity %s: %s is too large for the kit's arithmetic", name, q.String())
			return 0
		}
		return q.MilliValue()
	}
	p.value = milli(&c.Value)
	if rp := c.RequestPolicy; rp != nil {
		if rp.Default != nil {
			p.def, p.full = milli(rp.Default), false
		}
		for i := range rp.ValidValues {
			p.values = append(p.values, milli(&rp.ValidValues[i]))
		}
		if r := rp.ValidRange; r != nil {
			p.hasRange = true
			p.min, p.max, p.step = milli(r.Min), milli(r.Max), milli(r.Step)
		}
	}
	return p, err
}

// quantity is a milli-unit amount as a Quantity.
func quantity(milli int64) resource.Quantity {
	return *resource.NewMilliQuantity(milli, resource.DecimalSI)
}

// consumes is what a request consumes of the capacity: given false (no
// amount) takes the policy's default, or the whole capacity without one;
// an amount is rounded up to the smallest valid value at least as large,
// or to the range's minimum and then up to the next step; ok is false when
// the result is above the range's maximum, above every valid value or
// above the capacity (the device cannot serve the request).
func (p capacityPolicy) consumes(amount int64, given bool) (int64, bool) {
	if !given {
		if p.full {
			return p.value, true
		}
		return p.def, p.def <= p.value
	}
	r := amount
	switch {
	case len(p.values) > 0:
		found := false
		for _, v := range p.values {
			if v >= amount {
				r, found = v, true
				break
			}
		}
		if !found {
			return 0, false
		}
	case p.hasRange:
		if r < p.min {
			r = p.min
		} else if p.step > 0 {
			r = p.min + (r-p.min+p.step-1)/p.step*p.step
		}
		if p.max > 0 && r > p.max {
			return 0, false
		}
	}
	return r, r <= p.value
}

// smallestShare is the amount of the smallest valid request (a third of
// the capacity without a policy that bounds it) and what it consumes.
func (p capacityPolicy) smallestShare() (int64, int64) {
	amount := p.value / 3
	switch {
	case len(p.values) > 0:
		amount = p.values[0]
	case p.hasRange && p.min > 0:
		amount = p.min
	}
	c, _ := p.consumes(amount, true)
	return amount, c
}

// largestShare is the largest amount a request may ask for: the
// capacity, or less where the policy's values or range end below it.
func (p capacityPolicy) largestShare() int64 {
	switch {
	case len(p.values) > 0:
		best := int64(0)
		for _, v := range p.values {
			if v <= p.value {
				best = v
			}
		}
		return best
	case p.hasRange:
		top := p.value
		if p.max > 0 && p.max < top {
			top = p.max
		}
		if p.step > 0 && top >= p.min {
			top = p.min + (top-p.min)/p.step*p.step
		}
		return top
	}
	return p.value
}

// exceeding is the smallest amount whose consumption, added to held, is
// more than the capacity, and what it consumes; ok is false when no valid
// amount is that large.
func (p capacityPolicy) exceeding(held int64) (amount, consumed int64, ok bool) {
	amount = p.value - held + 1
	consumed, ok = p.consumes(amount, true)
	if !ok && amount < 1000 {
		// Below one unit: ask for one unit, a rounder amount.
		amount = 1000
		consumed, ok = p.consumes(amount, true)
	}
	return amount, consumed, ok && held+consumed > p.value
}

// betweenValid is an amount the policy rounds up, and what it consumes;
// ok is false when the policy rounds nothing (none, or a range without a
// minimum or step that makes a gap).
func (p capacityPolicy) betweenValid() (amount, consumed int64, ok bool) {
	switch {
	case len(p.values) > 0 && p.values[0] > 1:
		amount = p.values[0] / 2
	case len(p.values) > 1:
		amount = (p.values[0] + p.values[1]) / 2
	case p.hasRange && p.step > 1:
		amount = p.min + p.step/2
	case p.hasRange && p.min > 1:
		amount = p.min / 2
	default:
		return 0, 0, false
	}
	consumed, ok = p.consumes(amount, true)
	return amount, consumed, ok && consumed != amount
}

// overPolicy is an amount no device with this policy can serve: above its
// largest valid value or its range's maximum, else above the capacity.
func (p capacityPolicy) overPolicy() int64 {
	switch {
	case len(p.values) > 0 && p.values[len(p.values)-1] < p.value:
		return p.values[len(p.values)-1] + 1000
	case p.hasRange && p.max > 0 && p.max < p.value:
		return p.max + 1000
	}
	return p.value + 1000
}

// describe says what the policy is, for findings.
func (p capacityPolicy) describe() string {
	q := func(v int64) string { x := quantity(v); return x.String() }
	s := fmt.Sprintf("capacity %s of %s", p.Name, q(p.value))
	switch {
	case len(p.values) > 0:
		var vs []string
		for _, v := range p.values {
			vs = append(vs, q(v))
		}
		s += fmt.Sprintf(", valid values %v", vs)
	case p.hasRange:
		s += fmt.Sprintf(", valid range min %s", q(p.min))
		if p.max > 0 {
			s += " max " + q(p.max)
		}
		if p.step > 0 {
			s += " step " + q(p.step)
		}
	}
	if p.full {
		return s + ", no default (a request without an amount takes it all)"
	}
	return s + ", default " + q(p.def)
}
