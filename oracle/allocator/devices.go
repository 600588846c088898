package allocator

import (
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// optionalNodeOperationsFeature is the node-declared feature a node must
// advertise before devices of slices with skipNodeOperations may be used.
const optionalNodeOperationsFeature = "DRAOptionalNodeOperations"

// device is one device of a valid pool visible from the node, in upstream's
// search order (pool, slice name, published order).
type device struct {
	id         structured.DeviceID
	api        *resourceapi.Device
	slice      *sliceInfo
	pool       *pool
	multi      bool // allowMultipleAllocations with consumable capacity on
	inState    bool // in AllocatedDevices
	capBase    structured.ConsumedCapacity
	sharedBase bool // shared allocations of allocated claims exist
	nodeErr    error
	nodeOK     bool
	counters   []counterUse
	compat     []compatUse
	sig        int
	attrKeys   []string // packing mode: "name=value" keys, lazily
}

// ID returns the device's ID, making it on first use.
func (d *device) ID() structured.DeviceID {
	if d.id == (structured.DeviceID{}) {
		d.id = structured.MakeDeviceID(d.pool.key.driver, d.pool.key.pool, d.api.Name)
	}
	return d.id
}

type counterUse struct {
	c   int
	amt int64
}

type compatUse struct {
	set    int
	groups []string // sorted; empty: the device declares no groups
}

func (s *search) buildDevices() error {
	s.ct = s.a.buildCounters(s.pools)
	compatSets := map[string]int{}
	total := 0
	for _, p := range s.pools {
		if !p.incomplete && !p.invalid {
			for _, si := range p.slices {
				total += len(si.s.Spec.Devices)
			}
		}
	}
	store := make([]device, total)
	s.devs = make([]*device, 0, total)
	st := &s.a.state
	// Device IDs are interned strings, costly to make: without allocated
	// devices they are only needed for messages, made on demand.
	stateEmpty := len(st.AllocatedDevices) == 0 && len(st.AggregatedCapacity) == 0 && len(st.AllocatedSharedDeviceIDs) == 0
	for _, p := range s.pools {
		p.firstDev = len(s.devs)
		if p.incomplete || p.invalid {
			p.endDev = p.firstDev
			continue
		}
		driverID, poolID := draapi.MakeUniqueString(p.key.driver), draapi.MakeUniqueString(p.key.pool)
		for _, si := range p.slices {
			perDevice := ptr.Deref(si.s.Spec.PerDeviceNodeSelection, false)
			for i := range si.s.Spec.Devices {
				api := &si.s.Spec.Devices[i]
				d := &store[len(s.devs)]
				*d = device{
					api:    api,
					slice:  si,
					pool:   p,
					multi:  s.features.ConsumableCapacity && ptr.Deref(api.AllowMultipleAllocations, false),
					nodeOK: true,
				}
				if !stateEmpty {
					d.id = structured.DeviceID{Driver: driverID, Pool: poolID, Device: draapi.MakeUniqueString(api.Name)}
					d.inState = st.AllocatedDevices.Has(d.id)
					capBase, hasAgg := st.AggregatedCapacity[d.id]
					d.capBase = capBase
					d.sharedBase = hasAgg || s.a.sharedAllocated(d.id)
				}
				if perDevice {
					d.nodeOK, d.nodeErr = s.a.nodeMatches(s.node, ptr.Deref(api.NodeName, ""), ptr.Deref(api.AllNodes, false), api.NodeSelector)
				}
				if p.counterIndex != nil {
					for _, use := range api.ConsumesCounters {
						names := make([]string, 0, len(use.Counters))
						for n := range use.Counters {
							names = append(names, n)
						}
						slices.Sort(names)
						for _, n := range names {
							idx := p.counterIndex[[2]string{use.CounterSet, n}]
							q := use.Counters[n].Value
							d.counters = append(d.counters, counterUse{idx, q.ScaledValue(s.ct.scale[idx])})
						}
						if s.features.CompatibilityGroups {
							key := p.key.String() + "/" + use.CounterSet
							set, ok := compatSets[key]
							if !ok {
								set = len(compatSets)
								compatSets[key] = set
							}
							g := slices.Clone(use.CompatibilityGroups)
							slices.Sort(g)
							d.compat = append(d.compat, compatUse{set, g})
						}
					}
				}
				s.devs = append(s.devs, d)
			}
		}
		p.endDev = len(s.devs)
	}
	if s.features.CompatibilityGroups {
		s.compat = make([][]compatState, len(compatSets))
		s.seedCompat(compatSets)
	}
	return nil
}

// seedCompat folds the compatibility groups of already allocated devices
// into the per-counter-set intersections.
func (s *search) seedCompat(compatSets map[string]int) {
	for _, p := range s.pools {
		if p.incomplete || p.invalid {
			continue
		}
		for _, group := range [][]*sliceInfo{p.slices, p.notTargeting} {
			for _, si := range group {
				for i := range si.s.Spec.Devices {
					api := &si.s.Spec.Devices[i]
					if len(api.ConsumesCounters) == 0 || !s.a.allocatedInState(structured.MakeDeviceID(p.key.driver, p.key.pool, api.Name)) {
						continue
					}
					for _, use := range api.ConsumesCounters {
						set, ok := compatSets[p.key.String()+"/"+use.CounterSet]
						if !ok {
							set = len(s.compat)
							compatSets[p.key.String()+"/"+use.CounterSet] = set
							s.compat = append(s.compat, nil)
						}
						g := slices.Clone(use.CompatibilityGroups)
						slices.Sort(g)
						s.compat[set] = []compatState{top(s.compat[set]).add(g)}
					}
				}
			}
		}
	}
}

// compatState is the running compatibility-group intersection of the
// devices drawing from one counter set.
type compatState struct {
	members  bool
	allEmpty bool
	groups   []string
}

func top(st []compatState) compatState {
	if len(st) == 0 {
		return compatState{}
	}
	return st[len(st)-1]
}

func (c compatState) admits(groups []string) bool {
	if !c.members {
		return true
	}
	if len(groups) == 0 {
		return c.allEmpty
	}
	if c.allEmpty {
		return false
	}
	return len(intersect(c.groups, groups)) > 0
}

func (c compatState) add(groups []string) compatState {
	if !c.members {
		return compatState{members: true, allEmpty: len(groups) == 0, groups: groups}
	}
	if c.allEmpty || len(groups) == 0 {
		return c
	}
	return compatState{members: true, groups: intersect(c.groups, groups)}
}

// intersect returns the common elements of two sorted string slices.
func intersect(a, b []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			out = append(out, a[i])
			i++
			j++
		case -1:
			i++
		default:
			j++
		}
	}
	return out
}
