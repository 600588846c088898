package allocator

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// poolKey names a resource pool.
type poolKey struct{ driver, pool string }

func (k poolKey) String() string { return k.driver + "/" + k.pool }

// sliceInfo is what New precomputes about one ResourceSlice.
type sliceInfo struct {
	s          *resourceapi.ResourceSlice
	key        poolKey
	gen, count int64
	compat     bool // a device declares compatibility groups
}

// pool is one resource pool as seen from the node of one Allocate call.
type pool struct {
	key           poolKey
	incomplete    bool
	invalid       bool
	invalidReason string
	slices        []*sliceInfo // device slices targeting the node, by name
	notTargeting  []*sliceInfo // device slices of the pool not targeting the node
	counterSlices []*sliceInfo
	binding       bool // some device has binding conditions: tried last
	counterIndex  map[[2]string]int
	counterSetIdx map[string]int
	negative      bool // some counter is over-consumed by allocated devices
	firstDev      int  // this pool's devices are search.devs[firstDev:endDev]
	endDev        int
}

// nodeMatches is upstream's node selection rule (incubating NodeMatches),
// with each node selector parsed once per Allocator (nodeSelector).
func (a *Allocator) nodeMatches(node *v1.Node, nodeName string, allNodes bool, sel *v1.NodeSelector) (bool, error) {
	switch {
	case nodeName != "":
		return node != nil && node.Name == nodeName, nil
	case allNodes:
		return true, nil
	case sel != nil:
		s, err := a.nodeSelector(sel)
		if err != nil {
			return false, err
		}
		return s.Match(node), nil
	}
	return false, nil
}

// parsedSelector is a parsed node selector, or why it could not be parsed.
type parsedSelector struct {
	sel nodeMatcher
	err error
}

// nodeSelector parses sel once for the Allocator's life, keyed by its
// address: the slices do not change while the Allocator is used (upstream
// assumes the same). Parsing validates every label value of the selector,
// which for slices that select many nodes (a clique's IMEX channels, a TPU
// slice's sub-slices) cost more than the rest of Allocate when done per
// call on a 1,000-node cluster.
func (a *Allocator) nodeSelector(sel *v1.NodeSelector) (nodeMatcher, error) {
	if p, ok := a.selectors.Load(sel); ok {
		return p.(parsedSelector).sel, p.(parsedSelector).err
	}
	s, err := parseNodeSelector(sel)
	if err != nil {
		err = fmt.Errorf("failed to parse node selector %s: %w", sel.String(), err)
	}
	a.selectors.Store(sel, parsedSelector{s, err})
	return s, err
}

func newSliceInfo(s *resourceapi.ResourceSlice) *sliceInfo {
	return &sliceInfo{
		s:      s,
		key:    poolKey{s.Spec.Driver, s.Spec.Pool.Name},
		gen:    s.Spec.Pool.Generation,
		count:  s.Spec.Pool.ResourceSliceCount,
		compat: sliceUsesCompat(s),
	}
}

// poolSlices returns all slices of the cluster in pool key, indexing them
// on first use.
func (a *Allocator) poolSlices(key poolKey) []*sliceInfo {
	a.poolIndexOnce.Do(func() {
		a.slicesByPool = make(map[poolKey][]*sliceInfo, len(a.allSlices))
		for _, s := range a.allSlices {
			si := newSliceInfo(s)
			a.slicesByPool[si.key] = append(a.slicesByPool[si.key], si)
		}
	})
	return a.slicesByPool[key]
}

func sliceUsesCompat(s *resourceapi.ResourceSlice) bool {
	for i := range s.Spec.Devices {
		for _, c := range s.Spec.Devices[i].ConsumesCounters {
			if len(c.CompatibilityGroups) > 0 {
				return true
			}
		}
	}
	return false
}

// gatherPools collects the pools visible from node, upstream's rules:
// stale generations ignored, incomplete and invalid pools marked, pools
// sorted by driver and name with binding-condition pools last.
func (a *Allocator) gatherPools(node *v1.Node) ([]*pool, error) {
	byKey := map[poolKey][]*sliceInfo{}
	var order []poolKey
	consider := func(s *resourceapi.ResourceSlice) error {
		if !a.features.PartitionableDevices && (s.Spec.PerDeviceNodeSelection != nil || len(s.Spec.SharedCounters) > 0) {
			return nil
		}
		if !a.features.CompatibilityGroups && sliceUsesCompat(s) {
			return nil
		}
		relevant := false
		if nodeName, all := ptr.Deref(s.Spec.NodeName, ""), ptr.Deref(s.Spec.AllNodes, false); nodeName != "" || all || s.Spec.NodeSelector != nil {
			m, err := a.nodeMatches(node, nodeName, all, s.Spec.NodeSelector)
			if err != nil {
				return fmt.Errorf("failed to perform node selection for slice %s: %w", s.Name, err)
			}
			relevant = m
		} else if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				m, err := a.nodeMatches(node, ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector)
				if err != nil {
					return fmt.Errorf("failed to perform node selection for device %s in slice %s: %w", d.String(), s.Name, err)
				}
				if m {
					relevant = true
					break
				}
			}
		} else {
			return nil
		}
		if !relevant {
			return nil
		}
		si := newSliceInfo(s)
		cur := byKey[si.key]
		switch {
		case cur == nil:
			order = append(order, si.key)
			byKey[si.key] = []*sliceInfo{si}
		case si.gen < cur[0].gen:
		case si.gen > cur[0].gen:
			byKey[si.key] = []*sliceInfo{si}
		default:
			byKey[si.key] = append(cur, si)
		}
		return nil
	}
	for _, si := range a.slicesOnNode[node.Name] {
		if err := consider(si); err != nil {
			return nil, err
		}
	}
	for _, si := range a.slicesShared {
		if err := consider(si); err != nil {
			return nil, err
		}
	}

	var result, withBinding []*pool
	for _, key := range order {
		sl := byKey[key]
		gen := sl[0].gen
		var all []*sliceInfo
		if int64(len(sl)) != sl[0].count {
			obsolete := false
			for _, si := range a.poolSlices(key) {
				switch {
				case si.gen == gen:
					if a.features.CompatibilityGroups || !si.compat {
						all = append(all, si)
					}
				case si.gen > gen:
					obsolete = true
				}
			}
			if obsolete {
				continue
			}
			if int64(len(all)) != sl[0].count {
				result = append(result, &pool{key: key, incomplete: true})
				continue
			}
		}
		p := a.buildPool(key, sl, all)
		if p.binding {
			withBinding = append(withBinding, p)
		} else {
			result = append(result, p)
		}
	}
	sortPools := func(ps []*pool) {
		slices.SortFunc(ps, func(x, y *pool) int {
			if c := cmp.Compare(x.key.driver, y.key.driver); c != 0 {
				return c
			}
			return cmp.Compare(x.key.pool, y.key.pool)
		})
	}
	sortPools(result)
	sortPools(withBinding)
	return append(result, withBinding...), nil
}

func (a *Allocator) buildPool(key poolKey, targeting, all []*sliceInfo) *pool {
	targeting = slices.Clone(targeting)
	slices.SortFunc(targeting, func(x, y *sliceInfo) int { return cmp.Compare(x.s.Name, y.s.Name) })
	p := &pool{key: key}
	isCounter := func(si *sliceInfo) bool {
		return a.features.PartitionableDevices && len(si.s.Spec.SharedCounters) > 0
	}
	names := map[string]bool{}
	for _, si := range targeting {
		names[si.s.Name] = true
		if isCounter(si) {
			p.counterSlices = append(p.counterSlices, si)
		} else {
			p.slices = append(p.slices, si)
		}
	}
	for _, si := range all {
		if names[si.s.Name] {
			continue
		}
		if isCounter(si) {
			p.counterSlices = append(p.counterSlices, si)
		} else {
			p.notTargeting = append(p.notTargeting, si)
		}
	}
	for _, si := range p.slices {
		if si.s.Spec.Devices == nil {
			continue
		}
		for i := range si.s.Spec.Devices {
			if si.s.Spec.Devices[i].BindingConditions != nil {
				p.binding = true
			}
		}
	}
	numDevices := 0
	for _, si := range p.slices {
		numDevices += len(si.s.Spec.Devices)
	}
	seen := make(map[string]struct{}, numDevices)
	for _, si := range p.slices {
		for i := range si.s.Spec.Devices {
			n := si.s.Spec.Devices[i].Name
			if _, dup := seen[n]; dup {
				p.invalid, p.invalidReason = true, fmt.Sprintf("duplicate device name %s", n)
				return p
			}
			seen[n] = struct{}{}
		}
	}
	if !a.features.PartitionableDevices {
		return p
	}
	sets := map[string]*resourceapi.CounterSet{}
	for _, si := range p.counterSlices {
		for i := range si.s.Spec.SharedCounters {
			cs := &si.s.Spec.SharedCounters[i]
			if _, dup := sets[cs.Name]; dup {
				p.invalid, p.invalidReason = true, fmt.Sprintf("duplicate counter set name %s", cs.Name)
				return p
			}
			sets[cs.Name] = cs
		}
	}
	for _, group := range [][]*sliceInfo{p.slices, p.notTargeting} {
		for _, si := range group {
			for i := range si.s.Spec.Devices {
				for _, use := range si.s.Spec.Devices[i].ConsumesCounters {
					cs, ok := sets[use.CounterSet]
					if !ok {
						p.invalid, p.invalidReason = true, fmt.Sprintf("counter set %s not found", use.CounterSet)
						return p
					}
					for name := range use.Counters {
						if _, ok := cs.Counters[name]; !ok {
							p.invalid, p.invalidReason = true, fmt.Sprintf("counter %s not found in counter set %s", name, cs.Name)
							return p
						}
					}
				}
			}
		}
	}
	return p
}

// counterTable holds every counter of the node's pools as int64 at a
// per-counter decimal scale chosen so that all values involved are exact.
type counterTable struct {
	names []string // "pool/set/counter" for explanations
	sets  []string // "pool/set" per counter
	scale []resource.Scale
	avail []int64 // total minus consumption of already allocated devices
	total []int64 // what the counter set offers
}

// quantity returns value v of counter c as a quantity string.
func (t *counterTable) quantity(c int, v int64) string {
	return resource.NewScaledQuantity(v, t.scale[c]).String()
}

// scaleFor picks the finest decimal scale at which all quantities are exact
// and small enough to sum without overflow.
func scaleFor(qs []resource.Quantity) resource.Scale {
	for _, sc := range []resource.Scale{resource.Milli, 0, resource.Kilo, resource.Mega, resource.Giga, resource.Tera, resource.Peta, resource.Exa} {
		ok := true
		for _, q := range qs {
			v := q.ScaledValue(sc)
			if v > math.MaxInt64/1024 || v < -math.MaxInt64/1024 || resource.NewScaledQuantity(v, sc).Cmp(q) != 0 {
				ok = false
				break
			}
		}
		if ok {
			return sc
		}
	}
	return resource.Exa
}

// allocatedInState is upstream's IsDeviceAllocated, with the shared device
// IDs indexed once in New.
func (a *Allocator) allocatedInState(id structured.DeviceID) bool {
	if a.state.AllocatedDevices.Has(id) || a.sharedAllocated(id) {
		return true
	}
	_, ok := a.state.AggregatedCapacity[id]
	return ok
}

// sharedAllocated reports whether allocated claims hold shares of the
// device (the shared device IDs are indexed on first use).
func (a *Allocator) sharedAllocated(id structured.DeviceID) bool {
	if len(a.state.AllocatedSharedDeviceIDs) == 0 {
		return false
	}
	a.sharedOnce.Do(func() {
		a.sharedInState = make(map[structured.DeviceID]bool, len(a.state.AllocatedSharedDeviceIDs))
		for id := range a.state.AllocatedSharedDeviceIDs {
			a.sharedInState[id.GetDeviceID()] = true
		}
	})
	return a.sharedInState[id]
}

// buildCounters fills the counter table for the valid pools and returns,
// per pool, the index of each (counter set, counter).
func (a *Allocator) buildCounters(pools []*pool) *counterTable {
	t := &counterTable{}
	if !a.features.PartitionableDevices {
		return t
	}
	for _, p := range pools {
		if p.incomplete || p.invalid || len(p.counterSlices) == 0 {
			continue
		}
		p.counterIndex = map[[2]string]int{}
		p.counterSetIdx = map[string]int{}
		values := map[int][]resource.Quantity{}
		for _, si := range p.counterSlices {
			for _, cs := range si.s.Spec.SharedCounters {
				p.counterSetIdx[cs.Name] = len(p.counterSetIdx)
				names := make([]string, 0, len(cs.Counters))
				for n := range cs.Counters {
					names = append(names, n)
				}
				slices.Sort(names)
				for _, n := range names {
					idx := len(t.names)
					p.counterIndex[[2]string{cs.Name, n}] = idx
					t.names = append(t.names, p.key.String()+"/"+cs.Name+"/"+n)
					t.sets = append(t.sets, p.key.String()+"/"+cs.Name)
					values[idx] = append(values[idx], cs.Counters[n].Value)
				}
			}
		}
		type used struct {
			idx int
			q   resource.Quantity
		}
		var allocated []used
		for _, group := range [][]*sliceInfo{p.slices, p.notTargeting} {
			for _, si := range group {
				for i := range si.s.Spec.Devices {
					d := &si.s.Spec.Devices[i]
					isAlloc := len(d.ConsumesCounters) > 0 && a.allocatedInState(structured.MakeDeviceID(p.key.driver, p.key.pool, d.Name))
					for _, use := range d.ConsumesCounters {
						for n, c := range use.Counters {
							idx := p.counterIndex[[2]string{use.CounterSet, n}]
							values[idx] = append(values[idx], c.Value)
							if isAlloc {
								allocated = append(allocated, used{idx, c.Value})
							}
						}
					}
				}
			}
		}
		first := len(t.scale)
		for idx := first; idx < len(t.names); idx++ {
			sc := scaleFor(values[idx])
			t.scale = append(t.scale, sc)
			t.avail = append(t.avail, values[idx][0].ScaledValue(sc))
			t.total = append(t.total, values[idx][0].ScaledValue(sc))
		}
		for _, u := range allocated {
			t.avail[u.idx] -= u.q.ScaledValue(t.scale[u.idx])
		}
		for idx := first; idx < len(t.names); idx++ {
			if t.avail[idx] < 0 {
				p.negative = true
			}
		}
	}
	return t
}
