package allocator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// buildCandidates computes, for every request and subrequest, the devices
// that could ever serve it: selectors, not allocated to another claim
// (unless admin access), capacity, partitionable and node-operation
// gating, taints, constraint attributes present, counters not exceeded on
// their own. Then it gives every device a symmetry signature.
func (s *search) buildCandidates() error {
	shared := map[string]*reqInfo{}
	for ci := range s.reqs {
		for _, g := range s.reqs[ci] {
			for _, r := range g.subs {
				if r.all {
					r.candSet = make([]bool, len(s.devs))
					r.cands = r.allDevices
					for _, di := range r.cands {
						r.candSet[di] = true
					}
					continue
				}
				// Requests that differ at most in count have the same
				// candidates: they share one list (bound merges them).
				// Constraints make the list specific to the claim.
				key := ""
				if r.capacity == nil && len(r.tolerations) == 0 {
					key = fmt.Sprintf("%s\x00%t\x00%s", r.class.Name, r.admin, r.selKey)
					if len(r.consIdx) > 0 {
						key += fmt.Sprintf("\x00%d%v\x00%s", r.claim, r.consIdx, r.derivedKey)
					}
					if o := shared[key]; o != nil {
						r.cands, r.candSet = o.cands, o.candSet
						continue
					}
				}
				r.cands = nil
				r.candSet = make([]bool, len(s.devs))
				for di, d := range s.devs {
					if !r.admin && d.inState {
						continue
					}
					ok, err := s.selectable(r, di)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
					if s.features.ConsumableCapacity {
						fits, err := capacityFits(d.capBase, r.capacity, d.api.AllowMultipleAllocations, d.api.Capacity, nil, s.features.FractionalCapacityRange)
						if err != nil {
							return fmt.Errorf("claim %s, request %s: checking capacity for device %s: %w", klog.KObj(s.claims[ci]), r.name, d.ID(), err)
						}
						if !fits {
							continue
						}
					}
					if !s.staticOK(r, di) {
						continue
					}
					r.cands = append(r.cands, di)
					r.candSet[di] = true
				}
				if key != "" {
					shared[key] = r
				}
			}
		}
	}
	for ci := range s.cons {
		for _, con := range s.cons[ci] {
			if !con.match {
				con.internValues(s.attrs)
			}
		}
	}
	s.computeSignatures()
	return nil
}

func (s *search) staticOK(r *reqInfo, di int) bool {
	d := s.devs[di]
	if !s.features.PartitionableDevices && len(d.api.ConsumesCounters) > 0 {
		return false
	}
	// A shared device already in use does not draw its counters again.
	if len(d.api.ConsumesCounters) > 0 && !(d.multi && d.sharedBase) {
		if d.pool.negative {
			return false
		}
		for _, cu := range d.counters {
			if cu.amt > s.ct.avail[cu.c] {
				return false
			}
		}
	}
	if len(d.slice.s.Spec.SkipNodeOperations) > 0 &&
		(!s.features.OptionalNodeOperations || !slices.Contains(s.node.Status.DeclaredFeatures, optionalNodeOperationsFeature)) {
		return false
	}
	if s.features.DeviceTaints && untoleratedTaint(d.api, r.tolerations) != nil {
		return false
	}
	for _, k := range r.consIdx {
		c := s.cons[r.claim][k]
		v := c.valFor(s.attrs, r, di)
		if v.err == nil && (!v.present || c.list && v.set == nil) {
			return false
		}
	}
	return true
}

// computeSignatures gives devices that are interchangeable for the whole
// search the same signature: same candidate membership for every request,
// same counters consumed, same compatibility groups, same constraint
// attribute values. Devices with allowMultipleAllocations get their own.
func (s *search) computeSignatures() {
	ids := map[string]int{}
	var b strings.Builder
	for di, d := range s.devs {
		b.Reset()
		if d.multi {
			b.WriteString("multi:" + strconv.Itoa(di))
		}
		if d.inState {
			b.WriteString("alloc|")
		}
		for ci := range s.reqs {
			for _, g := range s.reqs[ci] {
				for _, r := range g.subs {
					if r.candSet[di] {
						b.WriteByte('1')
					} else {
						b.WriteByte('0')
					}
				}
			}
		}
		for _, cu := range d.counters {
			fmt.Fprintf(&b, "|c%d=%d", cu.c, cu.amt)
		}
		for _, cu := range d.compat {
			fmt.Fprintf(&b, "|g%d=%s", cu.set, strings.Join(cu.groups, ","))
		}
		writeVal := func(v *attrVal) {
			if v.err != nil {
				// Trying the device reports the error: never symmetric
				// with a device that has a value.
				b.WriteString("|aerr")
				return
			}
			fmt.Fprintf(&b, "|a%t%s=%s", v.present, v.scalar, strings.Join(v.set, "\x00"))
		}
		for ci := range s.cons {
			for _, c := range s.cons[ci] {
				if c.physical {
					writeVal(c.val(s.attrs, di))
				}
				for _, expr := range c.exprs {
					writeVal(s.attrs.derivedVal(expr, di))
				}
			}
		}
		key := b.String()
		id, ok := ids[key]
		if !ok {
			id = len(ids)
			ids[key] = id
		}
		d.sig = id
	}
}
