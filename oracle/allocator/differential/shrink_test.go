package differential

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

// copyScenario deep-copies the parts of a scenario the allocators see.
func copyScenario(s *scenario.Scenario) *scenario.Scenario {
	c := *s
	c.Node = s.Node.DeepCopy()
	c.DeviceClasses = deepCopies(s.DeviceClasses)
	c.ResourceSlices = deepCopies(s.ResourceSlices)
	c.AllocatedClaims = deepCopies(s.AllocatedClaims)
	c.Claims = deepCopies(s.Claims)
	return &c
}

func deepCopies[T interface{ DeepCopy() T }](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, o := range in {
		out[i] = o.DeepCopy()
	}
	return out
}

// shrink greedily drops parts of s while the failure class persists and
// returns the smallest scenario found.
func shrink(s *scenario.Scenario, class string) *scenario.Scenario {
	fails := func(c *scenario.Scenario) bool {
		problem, _, _ := verdict(c)
		return problem != "" && failureClass(problem) == class
	}
	cur := copyScenario(s)
	for changed := true; changed; {
		changed = false
		for _, cand := range candidates(cur) {
			if fails(cand) {
				cur, changed = cand, true
				break
			}
		}
	}
	return cur
}

// candidates are the scenarios one removal smaller than s.
func candidates(s *scenario.Scenario) []*scenario.Scenario {
	var out []*scenario.Scenario
	try := func(edit func(c *scenario.Scenario) bool) {
		c := copyScenario(s)
		if edit(c) {
			out = append(out, c)
		}
	}
	for i := range s.Claims {
		if len(s.Claims) > 1 {
			try(func(c *scenario.Scenario) bool { c.Claims = slices.Delete(c.Claims, i, i+1); return true })
		}
		spec := s.Claims[i].Spec.Devices
		for j := range spec.Constraints {
			try(func(c *scenario.Scenario) bool {
				d := &c.Claims[i].Spec.Devices
				d.Constraints = slices.Delete(d.Constraints, j, j+1)
				return true
			})
		}
		for j := range spec.Requests {
			if len(spec.Requests) > 1 {
				try(func(c *scenario.Scenario) bool { return dropRequest(&c.Claims[i].Spec.Devices, j) })
			}
			try(func(c *scenario.Scenario) bool { return simplifyRequest(&c.Claims[i].Spec.Devices.Requests[j]) })
		}
	}
	for i := range s.AllocatedClaims {
		try(func(c *scenario.Scenario) bool {
			c.AllocatedClaims = slices.Delete(c.AllocatedClaims, i, i+1)
			return true
		})
	}
	for i, sl := range s.ResourceSlices {
		try(func(c *scenario.Scenario) bool {
			// Drop the slice and keep its pool's slice count consistent.
			gone := c.ResourceSlices[i]
			c.ResourceSlices = slices.Delete(c.ResourceSlices, i, i+1)
			for _, o := range c.ResourceSlices {
				if o.Spec.Driver == gone.Spec.Driver && o.Spec.Pool.Name == gone.Spec.Pool.Name && o.Spec.Pool.Generation == gone.Spec.Pool.Generation {
					o.Spec.Pool.ResourceSliceCount--
				}
			}
			return true
		})
		for j := range sl.Spec.Devices {
			if len(sl.Spec.Devices) > 1 {
				try(func(c *scenario.Scenario) bool {
					c.ResourceSlices[i].Spec.Devices = slices.Delete(c.ResourceSlices[i].Spec.Devices, j, j+1)
					return true
				})
			}
			try(func(c *scenario.Scenario) bool { return simplifyDevice(&c.ResourceSlices[i].Spec.Devices[j]) })
		}
	}
	return out
}

// dropRequest removes request j and every constraint reference to it.
func dropRequest(d *resourceapi.DeviceClaim, j int) bool {
	name := d.Requests[j].Name
	d.Requests = slices.Delete(d.Requests, j, j+1)
	var kept []resourceapi.DeviceConstraint
	for _, con := range d.Constraints {
		if len(con.Requests) == 0 {
			kept = append(kept, con)
			continue
		}
		con.Requests = slices.DeleteFunc(con.Requests, func(r string) bool { return r == name || len(r) > len(name) && r[:len(name)+1] == name+"/" })
		if len(con.Requests) > 0 {
			kept = append(kept, con)
		}
	}
	d.Constraints = kept
	return true
}

// simplifyRequest drops one optional part of a request; false if none is left.
func simplifyRequest(r *resourceapi.DeviceRequest) bool {
	if len(r.FirstAvailable) > 1 {
		r.FirstAvailable = r.FirstAvailable[:len(r.FirstAvailable)-1]
		return true
	}
	if e := r.Exactly; e != nil {
		switch {
		case len(e.Selectors) > 0:
			e.Selectors = nil
		case e.Capacity != nil:
			e.Capacity = nil
		case len(e.Tolerations) > 0:
			e.Tolerations = nil
		case e.AllocationMode == resourceapi.DeviceAllocationModeExactCount && e.Count > 1:
			e.Count--
		default:
			return false
		}
		return true
	}
	return false
}

// simplifyDevice drops one optional part of a device; false if none is left.
func simplifyDevice(d *resourceapi.Device) bool {
	switch {
	case len(d.Taints) > 0:
		d.Taints = nil
	case len(d.Attributes) > 0 && len(d.ConsumesCounters) == 0 && d.AllowMultipleAllocations == nil:
		return false
	default:
		return false
	}
	return true
}

// size counts claims, requests, slices and devices.
func size(s *scenario.Scenario) int {
	n := len(s.Claims) + len(s.AllocatedClaims) + len(s.ResourceSlices)
	for _, c := range s.Claims {
		n += len(c.Spec.Devices.Requests) + len(c.Spec.Devices.Constraints)
	}
	for _, sl := range s.ResourceSlices {
		n += len(sl.Spec.Devices)
	}
	return n
}

// TestCandidatesAreEditedCopies: every candidate is one real edit of a copy
// (it differs from the scenario and is no larger), and making them leaves the
// scenario itself untouched, so shrinking never corrupts what it shrinks.
func TestCandidatesAreEditedCopies(t *testing.T) {
	for seed := range uint64(50) {
		s := generate(seed)
		before, err := scenario.Marshal(s)
		if err != nil {
			t.Fatalf("marshal seed %d: %v", seed, err)
		}
		cands := candidates(s)
		if len(cands) == 0 {
			t.Fatalf("seed %d: no candidate for a scenario of size %d", seed, size(s))
		}
		for i, c := range cands {
			data, err := scenario.Marshal(c)
			if err != nil {
				t.Fatalf("seed %d candidate %d: marshal: %v", seed, i, err)
			}
			if string(data) == string(before) {
				t.Errorf("seed %d candidate %d: no edit", seed, i)
			}
			if size(c) > size(s) {
				t.Errorf("seed %d candidate %d: size %d grew from %d", seed, i, size(c), size(s))
			}
		}
		after, _ := scenario.Marshal(s)
		if string(after) != string(before) {
			t.Fatalf("seed %d: making candidates changed the scenario", seed)
		}
	}
}
