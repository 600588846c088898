package allocator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/klog/v2"
)

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

// prepareConstraints builds the constraints of claim ci like upstream
// (an unknown or, for upstream's stable variant, distinctAttribute
// constraint is an error) and records which of the claim's requests each
// applies to and where they take its attribute from.
func (s *search) prepareConstraints(ci int, claim *resourceapi.ResourceClaim) error {
	for i, c := range claim.Spec.Devices.Constraints {
		con := &constraint{index: i, requests: sets.New(c.Requests...), list: s.features.ListTypeAttributes}
		switch {
		case c.MatchAttribute != nil:
			con.match, con.attr = true, *c.MatchAttribute
		case c.DistinctAttribute != nil && s.a.distinctOK:
			con.attr = *c.DistinctAttribute
		default:
			return fmt.Errorf("claim %s, constraint #%d: empty constraint (unsupported constraint type?)", klog.KObj(claim), i)
		}
		con.vals = make([]*attrVal, len(s.devs))
		s.cons[ci] = append(s.cons[ci], con)
	}
	for _, g := range s.reqs[ci] {
		for _, r := range g.subs {
			for k, con := range s.cons[ci] {
				if con.applies(r) {
					r.consIdx = append(r.consIdx, k)
					con.addSource(r)
				}
			}
		}
	}
	return nil
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
func (c *constraint) val(src *attrSource, di int) *attrVal {
	if v := c.vals[di]; v != nil {
		return v
	}
	v := makeAttrVal(lookupAttribute(src.devs[di], c.attr))
	c.vals[di] = v
	return v
}

// valFor returns device di's value of the constraint attribute as request
// r sees it: r's derived attribute of that name if it defines one (it
// shadows the device's attribute), else the device's attribute.
func (c *constraint) valFor(src *attrSource, r *reqInfo, di int) *attrVal {
	if expr, ok := r.derived[c.attr]; ok {
		return src.derivedVal(expr, di)
	}
	return c.val(src, di)
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
func (c *constraint) internValues(src *attrSource) {
	ids := map[string]int32{}
	intern := func(val func(di int) *attrVal) [][]int32 {
		out := make([][]int32, len(src.devs))
		for di := range src.devs {
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
		c.valIDs = intern(func(di int) *attrVal { return c.val(src, di) })
	}
	for _, expr := range c.exprs {
		if c.exprIDs == nil {
			c.exprIDs = map[string][][]int32{}
		}
		c.exprIDs[expr] = intern(func(di int) *attrVal { return src.derivedVal(expr, di) })
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

// attrSource gives the devices' values of constraint attributes: a
// device's own attribute (constraint.val) or a derived attribute
// expression evaluated on the device (derivedVal).
type attrSource struct {
	ctx      context.Context
	celCache *cel.Cache
	devs     []*device
	derived  map[string]*derivedExpr // by expression, on first use
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
func (src *attrSource) derivedVal(expr string, di int) *attrVal {
	de := src.derived[expr]
	if de == nil {
		de = &derivedExpr{compiled: src.celCache.GetOrCompileDerivedAttribute(expr), vals: make([]*attrVal, len(src.devs))}
		if src.derived == nil {
			src.derived = map[string]*derivedExpr{}
		}
		src.derived[expr] = de
	}
	if v := de.vals[di]; v != nil {
		return v
	}
	var v *attrVal
	if de.compiled.Error != nil {
		v = &attrVal{err: de.compiled.Error, compileErr: true}
	} else {
		d := src.devs[di]
		a, _, err := de.compiled.EvaluateDerivedAttribute(src.ctx, cel.Device{
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
