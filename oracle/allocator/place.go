package allocator

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
)

type chosenDev struct {
	dev      int
	req      *reqInfo
	shareID  *types.UID
	consumed map[resourceapi.QualifiedName]resource.Quantity
}

// placed records what tryDevice changed, for undo.
type placed struct {
	countersTaken bool
	compatPushed  []int
	consAdded     int
	marked        bool
	capInserted   bool
	capExisted    bool
	consumed      map[resourceapi.QualifiedName]resource.Quantity
	added         bool
}

// tryDevice is upstream's allocateDevice: availability, partitionable
// gating, optional node operations, compatibility groups, counters,
// taints, constraints, exclusivity, consumable capacity.
func (s *search) tryDevice(ci int, r *reqInfo, di int, must bool) (placed, bool, error) {
	d := s.devs[di]
	var p placed
	if !d.multi && r.admin && s.usedByClaim(di, ci) {
		return p, false, nil
	}
	if !r.admin && s.inUse(di) {
		s.reject(r, s.inUseWhy(ci, di), di)
		return p, false, nil
	}
	if !s.features.PartitionableDevices && len(d.api.ConsumesCounters) > 0 {
		return p, false, nil
	}
	if len(d.slice.s.Spec.SkipNodeOperations) > 0 {
		switch {
		case !s.features.OptionalNodeOperations:
			s.reject(r, "its slice skips node operations, which needs the OptionalNodeOperations feature", di)
			return p, false, nil
		case !slices.Contains(s.node.Status.DeclaredFeatures, optionalNodeOperationsFeature):
			s.reject(r, fmt.Sprintf("its slice skips node operations, and node %s does not declare feature %s", s.node.Name, optionalNodeOperationsFeature), di)
			return p, false, nil
		}
	}
	skipCounters := d.multi && (d.sharedBase || s.allocCap[di] != nil)
	if !skipCounters && len(d.api.ConsumesCounters) > 0 {
		if s.features.CompatibilityGroups {
			for _, cu := range d.compat {
				if !top(s.compat[cu.set]).admits(cu.groups) {
					s.undo(ci, r, di, p)
					s.reject(r, "its compatibility groups share none with those of the devices already allocated from its counter set", di)
					return p, false, nil
				}
				s.compat[cu.set] = append(s.compat[cu.set], top(s.compat[cu.set]).add(cu.groups))
				p.compatPushed = append(p.compatPushed, cu.set)
			}
		}
		if d.pool.negative {
			s.undo(ci, r, di, p)
			s.reject(r, "allocated claims already consume more of the counters of pool "+d.pool.key.String()+" than it has", di)
			return p, false, nil
		}
		for _, cu := range d.counters {
			if s.rem[cu.c] < cu.amt {
				s.undo(ci, r, di, p)
				s.reject(r, s.counterWhy(cu), di)
				return p, false, nil
			}
		}
		for _, cu := range d.counters {
			s.rem[cu.c] -= cu.amt
		}
		p.countersTaken = true
	}
	if s.features.DeviceTaints {
		if t := untoleratedTaint(d.api, r.tolerations); t != nil {
			s.undo(ci, r, di, p)
			s.reject(r, fmt.Sprintf("it has taint %s=%s:%s, which the request does not tolerate", t.Key, t.Value, t.Effect), di)
			return p, false, nil
		}
	}
	for _, k := range r.consIdx {
		c := s.cons[ci][k]
		v := c.valFor(s.attrs, r, di)
		if v.err != nil {
			s.undo(ci, r, di, p)
			return p, false, c.derivedError(v, d)
		}
		if !c.accepts(v) {
			s.undo(ci, r, di, p)
			s.reject(r, constraintWhy(c, v), di)
			if must {
				return p, false, fmt.Errorf("claim %s, request %s: cannot add device %s because a claim constraint would not be satisfied", klog.KObj(s.claims[ci]), r.name, d.ID())
			}
			return p, false, nil
		}
		c.add(v)
		p.consAdded++
	}
	if !d.multi {
		s.use[di] = append(s.use[di], int32(ci))
		p.marked = true
	}
	var shareID *types.UID
	if s.features.ConsumableCapacity {
		fits, err := capacityFits(d.capBase, r.capacity, d.api.AllowMultipleAllocations, d.api.Capacity, s.allocCap[di], s.features.FractionalCapacityRange)
		if err != nil {
			s.undo(ci, r, di, p)
			return p, false, fmt.Errorf("claim %s, request %s: rechecking capacity for device %s: %w", klog.KObj(s.claims[ci]), r.name, d.ID(), err)
		}
		if !fits {
			s.undo(ci, r, di, p)
			s.reject(r, "too little of its consumable capacity is left for the request", di)
			return p, false, nil
		}
		if d.multi {
			consumed, err := consumedCapacity(r.capacity, d.api.Capacity, s.features.FractionalCapacityRange)
			if err != nil {
				s.undo(ci, r, di, p)
				return p, false, fmt.Errorf("claim %s, request %s: computing consumed capacity for device %s: %w", klog.KObj(s.claims[ci]), r.name, d.ID(), err)
			}
			id := uuid.NewUUID()
			shareID = &id
			cc := s.allocCap[di]
			p.capExisted = cc != nil
			if cc == nil {
				cc = structured.ConsumedCapacity{}
				s.allocCap[di] = cc
			}
			for name, q := range consumed {
				if v, ok := cc[name]; ok {
					v.Add(q)
				} else {
					q := q.DeepCopy()
					cc[name] = &q
				}
			}
			p.capInserted = true
			p.consumed = consumed
		}
	}
	c := chosenDev{dev: di, req: r, shareID: shareID}
	if len(p.consumed) > 0 {
		c.consumed = p.consumed
	}
	s.chosen[ci] = append(s.chosen[ci], c)
	p.added = true
	return p, true, nil
}

// undo reverts what tryDevice recorded in p (the chosen entry only if the
// device was placed).
func (s *search) undo(ci int, r *reqInfo, di int, p placed) {
	d := s.devs[di]
	if p.added {
		s.chosen[ci] = s.chosen[ci][:len(s.chosen[ci])-1]
	}
	if p.capInserted {
		cc := s.allocCap[di]
		for name, q := range p.consumed {
			if v, ok := cc[name]; ok {
				v.Sub(q)
			}
		}
		if !p.capExisted {
			delete(s.allocCap, di)
		}
	}
	if p.marked {
		s.use[di] = s.use[di][:len(s.use[di])-1]
	}
	for i := p.consAdded - 1; i >= 0; i-- {
		s.cons[ci][r.consIdx[i]].remove()
	}
	if p.countersTaken {
		for _, cu := range d.counters {
			s.rem[cu.c] += cu.amt
		}
	}
	for i := len(p.compatPushed) - 1; i >= 0; i-- {
		set := p.compatPushed[i]
		s.compat[set] = s.compat[set][:len(s.compat[set])-1]
	}
}

// capacityLeft reports whether device di still has the capacity request r
// consumes; when it has not, the rejection is recorded for Explain.
func (s *search) capacityLeft(claim *resourceapi.ResourceClaim, r *reqInfo, di int) (bool, error) {
	d := s.devs[di]
	fits, err := capacityFits(d.capBase, r.capacity, d.api.AllowMultipleAllocations, d.api.Capacity, s.allocCap[di], s.features.FractionalCapacityRange)
	if err != nil {
		return false, fmt.Errorf("claim %s, request %s: checking capacity for device %s: %w", klog.KObj(claim), r.name, d.ID(), err)
	}
	if !fits {
		s.reject(r, "too little of its consumable capacity is left for the request", di)
	}
	return fits, nil
}
