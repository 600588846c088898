package allocator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
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
					d.nodeOK, d.nodeErr = nodeMatches(s.node, ptr.Deref(api.NodeName, ""), ptr.Deref(api.AllNodes, false), api.NodeSelector)
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

// selectable is upstream's isSelectable: binding-condition gating, class
// and request CEL selectors, per-device node selection. Results are
// memoized per (class, device) and per (request selectors, device), so
// identical requests of identical claims evaluate each device once.
func (s *search) selectable(r *reqInfo, di int) (bool, error) {
	d := s.devs[di]
	if !s.features.DeviceBindingAndStatus && len(d.api.BindingConditions) > 0 {
		return false, nil
	}
	if r.classMemo == nil {
		r.classMemo = s.memo("c\x00" + r.class.Name)
	}
	ok, err := memoEval(r.classMemo, di, func() (bool, error) {
		return s.evalSelectors(r, r.class, r.class.Spec.Selectors, d)
	})
	if err != nil || !ok {
		return false, err
	}
	if len(r.selectors) > 0 {
		if r.selMemo == nil {
			r.selMemo = s.memo("r\x00" + r.selKey)
		}
		ok, err = memoEval(r.selMemo, di, func() (bool, error) {
			return s.evalSelectors(r, nil, r.selectors, d)
		})
		if err != nil || !ok {
			return false, err
		}
	}
	if d.nodeErr != nil {
		return false, d.nodeErr
	}
	return d.nodeOK, nil
}

// memo returns the per-device result memo of one selector list (a class's
// or a request's), shared by all requests with the same list.
func (s *search) memo(key string) []int8 {
	m := s.selMemo[key]
	if m == nil {
		m = make([]int8, len(s.devs))
		s.selMemo[key] = m
	}
	return m
}

func memoEval(m []int8, di int, eval func() (bool, error)) (bool, error) {
	switch m[di] {
	case 1:
		return true, nil
	case 2:
		return false, nil
	}
	ok, err := eval()
	if err != nil {
		return false, err
	}
	if ok {
		m[di] = 1
	} else {
		m[di] = 2
	}
	return ok, nil
}

func (s *search) evalSelectors(r *reqInfo, class *resourceapi.DeviceClass, sels []resourceapi.DeviceSelector, d *device) (bool, error) {
	claim := s.claims[r.claim]
	for i, sel := range sels {
		if sel.CEL == nil {
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d: CEL expression empty (unsupported selector type?)", class.Name, i)
			}
			return false, fmt.Errorf("claim %s, request %s, selector #%d: CEL expression empty (unsupported selector type?)", klog.KObj(claim), r.name, i)
		}
		expr := s.a.celCache.GetOrCompile(sel.CEL.Expression)
		if expr.Error != nil {
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d: CEL compile error: %w", class.Name, i, expr.Error)
			}
			return false, fmt.Errorf("claim %s: selector #%d: CEL compile error: %w", klog.KObj(claim), i, expr.Error)
		}
		matches, _, err := expr.DeviceMatches(s.ctx, cel.Device{
			Driver:                   d.pool.key.driver,
			AllowMultipleAllocations: d.api.AllowMultipleAllocations,
			Attributes:               d.api.Attributes,
			Capacity:                 d.api.Capacity,
		})
		if err != nil {
			err = cel.EnhanceRuntimeError(err)
			if class != nil {
				return false, fmt.Errorf("class %s: selector #%d on device %s: CEL runtime error: %w", class.Name, i, d.ID(), err)
			}
			return false, fmt.Errorf("claim %s: selector #%d on device %s: CEL runtime error: %w", klog.KObj(claim), i, d.ID(), err)
		}
		if !matches {
			return false, nil
		}
	}
	return true, nil
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint of the
// device that none of the tolerations tolerates, or nil.
func untoleratedTaint(d *resourceapi.Device, tolerations []resourceapi.DeviceToleration) *resourceapi.DeviceTaint {
	for i := range d.Taints {
		taint := &d.Taints[i]
		if taint.Effect != resourceapi.DeviceTaintEffectNoSchedule && taint.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		tolerated := false
		for _, t := range tolerations {
			if resourceclaim.ToleratesTaint(t, *taint) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return taint
		}
	}
	return nil
}

// attrVal is a device's value of one constraint attribute.
type attrVal struct {
	present bool
	scalar  string   // typed key of a scalar value, "" for list or unknown
	set     []string // typed keys of all values (scalar: one), nil if unknown

	// err is set when a derived attribute's expression failed to compile
	// (compileErr) or to evaluate on the device. Like upstream, the error
	// is only reported when the search tries to add the device to the
	// constraint; until then the relaxations treat the value as unknown
	// but acceptable, so that they never cut a branch upstream would try.
	err        error
	compileErr bool
}

// derivedExpr is one derived attribute expression with its values per
// device, evaluated on first use (shared by every request, subrequest and
// constraint using the same expression, like upstream's cache).
type derivedExpr struct {
	compiled cel.CompilationResult
	vals     []*attrVal
}

// derivedVal returns device di's value of the derived attribute
// expression expr.
func (s *search) derivedVal(expr string, di int) *attrVal {
	de := s.derived[expr]
	if de == nil {
		de = &derivedExpr{compiled: s.a.celCache.GetOrCompileDerivedAttribute(expr), vals: make([]*attrVal, len(s.devs))}
		if s.derived == nil {
			s.derived = map[string]*derivedExpr{}
		}
		s.derived[expr] = de
	}
	if v := de.vals[di]; v != nil {
		return v
	}
	var v *attrVal
	if de.compiled.Error != nil {
		v = &attrVal{err: de.compiled.Error, compileErr: true}
	} else {
		d := s.devs[di]
		a, _, err := de.compiled.EvaluateDerivedAttribute(s.ctx, cel.Device{
			Driver:                   d.pool.key.driver,
			AllowMultipleAllocations: d.api.AllowMultipleAllocations,
			Attributes:               d.api.Attributes,
			Capacity:                 d.api.Capacity,
		})
		if err != nil {
			v = &attrVal{err: err}
		} else {
			v = makeAttrVal(a)
		}
	}
	de.vals[di] = v
	return v
}

func lookupAttribute(d *device, name resourceapi.FullyQualifiedName) *resourceapi.DeviceAttribute {
	if a, ok := d.api.Attributes[resourceapi.QualifiedName(name)]; ok {
		return &a
	}
	i := strings.Index(string(name), "/")
	if i < 0 || string(name[:i]) != d.pool.key.driver {
		return nil
	}
	if a, ok := d.api.Attributes[resourceapi.QualifiedName(name[i+1:])]; ok {
		return &a
	}
	return nil
}

func makeAttrVal(a *resourceapi.DeviceAttribute) *attrVal {
	if a == nil {
		return &attrVal{}
	}
	v := &attrVal{present: true}
	add := func(k string) { v.set = append(v.set, k) }
	switch {
	case len(a.IntValues) > 0:
		for _, x := range a.IntValues {
			add("i:" + strconv.FormatInt(x, 10))
		}
	case len(a.BoolValues) > 0:
		for _, x := range a.BoolValues {
			add("b:" + strconv.FormatBool(x))
		}
	case len(a.StringValues) > 0:
		for _, x := range a.StringValues {
			add("s:" + x)
		}
	case len(a.VersionValues) > 0:
		for _, x := range a.VersionValues {
			add("v:" + x)
		}
	case a.IntValue != nil:
		v.scalar = "i:" + strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		v.scalar = "b:" + strconv.FormatBool(*a.BoolValue)
	case a.StringValue != nil:
		v.scalar = "s:" + *a.StringValue
	case a.VersionValue != nil:
		v.scalar = "v:" + *a.VersionValue
	}
	if v.scalar != "" {
		v.set = []string{v.scalar}
	}
	slices.Sort(v.set)
	v.set = slices.Compact(v.set)
	return v
}

// constraint is a matchAttribute or distinctAttribute constraint of one
// claim with its search state.
type constraint struct {
	index    int
	match    bool
	attr     resourceapi.FullyQualifiedName
	requests sets.Set[string]
	list     bool // DRAListTypeAttributes: set semantics
	vals     []*attrVal

	// Where the requests it applies to take the attribute from: the
	// devices' attributes (physical) and/or derived attribute expressions
	// of that name (exprs, in order of first use).
	physical bool
	exprs    []string

	// distinct: every device's values as small integers, for the bound,
	// per source (valIDs: physical; exprIDs: per derived expression).
	valIDs  [][]int32
	exprIDs map[string][][]int32
	nvals   int

	n     int
	first string     // scalar match: key of the first device
	stack [][]string // list match: running intersections
	seen  []*attrVal // distinct: values so far
}

func (c *constraint) kind() string {
	if c.match {
		return "matchAttribute " + string(c.attr)
	}
	return "distinctAttribute " + string(c.attr)
}

func (c *constraint) applies(r *reqInfo) bool {
	if c.requests.Len() == 0 {
		return true
	}
	if r.parent == "" {
		return c.requests.Has(r.name)
	}
	return c.requests.Has(r.parent) || c.requests.Has(r.fullName)
}

// addSource records where request r, which the constraint applies to,
// takes the attribute from.
func (c *constraint) addSource(r *reqInfo) {
	expr, ok := r.derived[c.attr]
	if !ok {
		c.physical = true
		return
	}
	if !slices.Contains(c.exprs, expr) {
		c.exprs = append(c.exprs, expr)
	}
}

// val returns device di's own value of the constraint attribute.
func (c *constraint) val(s *search, di int) *attrVal {
	if v := c.vals[di]; v != nil {
		return v
	}
	v := makeAttrVal(lookupAttribute(s.devs[di], c.attr))
	c.vals[di] = v
	return v
}

// valFor returns device di's value of the constraint attribute as request
// r sees it: r's derived attribute of that name if it defines one (it
// shadows the device's attribute), else the device's attribute.
func (c *constraint) valFor(s *search, r *reqInfo, di int) *attrVal {
	if expr, ok := r.derived[c.attr]; ok {
		return s.derivedVal(expr, di)
	}
	return c.val(s, di)
}

// idsFor returns the interned values (see internValues) of every device
// as request r sees them.
func (c *constraint) idsFor(r *reqInfo) [][]int32 {
	if expr, ok := r.derived[c.attr]; ok {
		return c.exprIDs[expr]
	}
	return c.valIDs
}

// internValues numbers the values of the constraint attribute over all
// devices and value sources (distinctBound matches device slots to these
// numbers). A value whose derivation failed gets a number of its own: the
// bound must not count on it being a duplicate.
func (c *constraint) internValues(s *search) {
	ids := map[string]int32{}
	intern := func(val func(di int) *attrVal) [][]int32 {
		out := make([][]int32, len(s.devs))
		for di := range s.devs {
			v := val(di)
			if v.err != nil {
				out[di] = []int32{int32(len(ids))}
				ids["\x00err"+strconv.Itoa(len(ids))] = int32(len(ids))
				continue
			}
			for _, k := range v.set {
				id, ok := ids[k]
				if !ok {
					id = int32(len(ids))
					ids[k] = id
				}
				out[di] = append(out[di], id)
			}
		}
		return out
	}
	if c.physical {
		c.valIDs = intern(func(di int) *attrVal { return c.val(s, di) })
	}
	for _, expr := range c.exprs {
		if c.exprIDs == nil {
			c.exprIDs = map[string][][]int32{}
		}
		c.exprIDs[expr] = intern(func(di int) *attrVal { return s.derivedVal(expr, di) })
	}
	c.nvals = len(ids)
}

// derivedError is the error upstream reports when the derived attribute
// behind v could not be compiled or evaluated for device d.
func (c *constraint) derivedError(v *attrVal, d *device) error {
	if v.compileErr {
		return fmt.Errorf("compile derived attribute %s failed: %w", c.attr, v.err)
	}
	return fmt.Errorf("evaluate derived attribute %s on device %s failed: %w", c.attr, d.ID(), v.err)
}

// accepts reports whether add would succeed, without changing state. A
// value whose derivation failed is accepted: callers that add the device
// report the error first (see attrVal.err).
func (c *constraint) accepts(v *attrVal) bool {
	if v.err != nil {
		return true
	}
	if !v.present {
		return false
	}
	if c.match {
		if c.list {
			if v.set == nil {
				return false
			}
			return c.n == 0 || len(intersect(c.stack[c.n-1], v.set)) > 0
		}
		return c.n == 0 || (v.scalar != "" && v.scalar == c.first)
	}
	if c.list {
		if v.set == nil {
			return false
		}
		for _, o := range c.seen {
			if o.set != nil && len(intersect(o.set, v.set)) > 0 {
				return false
			}
		}
		return true
	}
	for _, o := range c.seen {
		if v.scalar == "" || o.scalar == v.scalar {
			return false
		}
	}
	return true
}

func (c *constraint) add(v *attrVal) {
	if c.match {
		if c.list {
			if c.n == 0 {
				c.stack = append(c.stack[:0], v.set)
			} else {
				c.stack = append(c.stack[:c.n], intersect(c.stack[c.n-1], v.set))
			}
		} else if c.n == 0 {
			c.first = v.scalar
		}
	} else {
		c.seen = append(c.seen, v)
	}
	c.n++
}

func (c *constraint) remove() {
	c.n--
	if !c.match {
		c.seen = c.seen[:len(c.seen)-1]
	}
}
