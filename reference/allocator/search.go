package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
)

// errLazyBudget ends the lazy first phase; the complete phase takes over.
var errLazyBudget = errors.New("lazy phase budget used up")

// search is the state of one Allocate call.
type search struct {
	a        *Allocator
	ctx      context.Context
	node     *v1.Node
	claims   []*resourceapi.ResourceClaim
	pools    []*pool
	features structured.Features
	devs     []*device
	ct       *counterTable
	reqs     [][]*reqGroup
	cons     [][]*constraint
	selMemo  map[string][]int8
	derived  map[string]*derivedExpr // by expression, on first use

	// search state
	use      [][]int32 // claims using each device exclusively, in order
	allocCap map[int]structured.ConsumedCapacity
	rem      []int64 // counters left
	compat   [][]compatState
	chosen   [][]chosenDev

	full      bool // complete phase: candidate lists, bounds, symmetry
	only      int  // >= 0: search only this claim (claimsAlone)
	exam      int  // candidate examinations in the lazy phase
	lazyLimit int
	steps     int

	// bookkeeping for Explain
	deepClaim, deepReq int
	rejects            map[*reqInfo]map[string]*why
	rootWhy            string
	pruneWhy           map[*reqInfo]map[string]int
}

// why is one reason a request could not take devices, for Explain: the
// devices it kept from the request, and how often it applied.
type why struct {
	devices map[int]struct{}
	n       int
}

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

func (s *search) initState() {
	s.use = make([][]int32, len(s.devs))
	s.allocCap = map[int]structured.ConsumedCapacity{}
	s.rem = slices.Clone(s.ct.avail)
	s.chosen = make([][]chosenDev, len(s.claims))
	s.rejects = map[*reqInfo]map[string]*why{}
	s.pruneWhy = map[*reqInfo]map[string]int{}
	s.deepClaim, s.deepReq = -1, -1
	s.only = -1
}

// run searches in upstream's order: a cheap lazy depth-first search first
// (evaluating selectors only for the devices it looks at, like upstream),
// and if that does not decide within a small budget, the complete search
// with candidate lists, bounds and symmetry breaking. Both enumerate
// solutions in the same order, so in ModeFirstFit both return upstream's
// first solution.
func (s *search) run() (bool, error) {
	if err := s.ctx.Err(); err != nil {
		return false, fmt.Errorf("filter operation aborted: %w", context.Cause(s.ctx))
	}
	if why := s.countCheck(); why != "" {
		s.rootWhy = why
		return false, nil
	}
	if s.a.opts.Mode == ModeFirstFit && !s.a.completeOnly {
		s.lazyLimit = 32 + 4*len(s.devs)
		ok, err := s.doClaim(0)
		if !errors.Is(err, errLazyBudget) {
			return ok, err
		}
	}
	s.full = true
	if err := s.buildCandidates(); err != nil {
		return false, err
	}
	if why := s.bound(0, 0, nil, 0, nil, 0); why != "" {
		s.rootWhy = why
		return false, nil
	}
	why, err := s.claimsAlone()
	if err != nil || why != "" {
		s.rootWhy = why
		return false, err
	}
	return s.doClaim(0)
}

// errIsolatedFit ends a search restricted to one claim (search.only) that
// found an allocation for it; unwinding undoes all of it.
var errIsolatedFit = errors.New("the claim fits on its own")

// claimsAlone searches each claim on its own, against the node's state
// before this Allocate call. Other claims only take devices, counters and
// capacity away (a shared device's counters are drawn once, by whichever
// claim comes first), so a claim that does not fit alone cannot fit with
// the others. This catches what the relaxation in bound cannot see (such
// as the capacity of shared devices used up by one claim's own requests)
// before the main search thrashes through the choices of earlier,
// unrelated claims. It returns why the claims cannot fit, or "" to go on.
func (s *search) claimsAlone() (string, error) {
	if len(s.claims) < 2 {
		return "", nil
	}
	defer func() { s.only = -1 }()
	for c := range s.claims {
		s.only = c
		s.resetExplain()
		ok, err := s.doClaim(c)
		switch {
		case errors.Is(err, errIsolatedFit):
			continue
		case err != nil && (s.ctx.Err() != nil || errors.Is(err, ErrStepBudget)):
			return "", err
		case err != nil || ok:
			// An input error the main search reports if it gets there.
			continue
		}
		why := "no device matches its requests"
		if s.deepClaim >= 0 {
			why = s.requestWhy()
		}
		return fmt.Sprintf("claim %s does not fit even on its own: %s", klog.KObj(s.claims[c]), why), nil
	}
	s.resetExplain()
	return "", nil
}

// resetExplain clears the bookkeeping Explain reports from.
func (s *search) resetExplain() {
	s.deepClaim, s.deepReq = -1, -1
	clear(s.rejects)
	clear(s.pruneWhy)
}

// countCheck is the counting pre-check, done before any selector is
// evaluated: every request without admin access needs its own devices
// (the smallest firstAvailable alternative counts), and unless a device
// can be shared (allowMultipleAllocations) each of them must be a
// different device not allocated already. It returns why the claims
// cannot fit, or "".
func (s *search) countCheck() string {
	free := 0
	for _, d := range s.devs {
		if d.multi {
			return ""
		}
		if !d.inState {
			free++
		}
	}
	need := 0
	for ci := range s.reqs {
		for _, g := range s.reqs[ci] {
			n := -1
			for _, r := range g.subs {
				k := r.num
				if r.admin {
					k = 0
				}
				if n < 0 || k < n {
					n = k
				}
			}
			if n > free {
				return fmt.Sprintf("claim %s, request %s: needs %d devices, only %d devices on node %s are unallocated",
					klog.KObj(s.claims[ci]), g.subs[0].nameForExplain(), n, free, s.node.Name)
			}
			need += n
		}
	}
	if need <= free {
		return ""
	}
	return fmt.Sprintf("the claims need at least %d devices, only %d devices on node %s are unallocated", need, free, s.node.Name)
}

func (s *search) doClaim(ci int) (bool, error) {
	if s.only >= 0 && ci > s.only {
		return false, errIsolatedFit
	}
	if ci == len(s.claims) {
		return true, nil
	}
	return s.doRequest(ci, 0)
}

func (s *search) doRequest(ci, ri int) (bool, error) {
	if ri == len(s.reqs[ci]) {
		return s.doClaim(ci + 1)
	}
	if ci > s.deepClaim || (ci == s.deepClaim && ri > s.deepReq) {
		s.deepClaim, s.deepReq = ci, ri
	}
	g := s.reqs[ci][ri]
	for si, r := range g.subs {
		if len(s.chosen[ci])+r.num+g.minRest > resourceapi.AllocationResultsMaxSize {
			s.reject(r, fmt.Sprintf("the claim would exceed %d allocated devices (AllocationResultsMaxSize)", resourceapi.AllocationResultsMaxSize), -1)
			continue
		}
		g.chosen = si
		var order []int
		if s.full {
			order = r.cands
			if s.a.opts.Mode == ModePacking && !r.all {
				order = s.packingOrder(r)
			}
		}
		ok, err := s.doSlot(ci, ri, r, 0, order, 0)
		if ok || err != nil {
			return ok, err
		}
	}
	g.chosen = 0
	return false, nil
}

// doSlot places device k of request r. In the lazy phase, start is a device
// position; in the complete phase, an index into order.
func (s *search) doSlot(ci, ri int, r *reqInfo, k int, order []int, start int) (bool, error) {
	s.steps++
	if s.a.opts.StepBudget > 0 && s.steps > s.a.opts.StepBudget {
		return false, fmt.Errorf("allocate on node %s after %d steps: %w", s.node.Name, s.steps, ErrStepBudget)
	}
	if s.steps&255 == 0 && s.ctx.Err() != nil {
		return false, fmt.Errorf("filter operation aborted: %w", context.Cause(s.ctx))
	}
	claim := s.claims[ci]
	if r.all {
		if len(r.allDevices) == 0 {
			s.reject(r, "no device matches for allocationMode All", -1)
			return false, nil
		}
		if k == len(r.allDevices) {
			return s.doRequest(ci, ri+1)
		}
		if len(s.chosen[ci])+len(r.allDevices)-k > resourceapi.AllocationResultsMaxSize {
			return false, nil
		}
		if s.full && k == 0 {
			if why := s.bound(ci, ri, r, k, order, start); why != "" {
				s.prune(r, why)
				return false, nil
			}
		}
		di := r.allDevices[k]
		p, ok, err := s.tryDevice(ci, r, di, true)
		if err != nil || !ok {
			return false, err
		}
		done, err := s.doSlot(ci, ri, r, k+1, order, start)
		if done {
			return true, nil
		}
		s.undo(ci, r, di, p)
		return false, err
	}
	if k == r.num {
		return s.doRequest(ci, ri+1)
	}
	if len(s.chosen[ci])+r.num-k > resourceapi.AllocationResultsMaxSize {
		return false, nil
	}
	if s.full {
		if why := s.bound(ci, ri, r, k, order, start); why != "" {
			s.prune(r, why)
			return false, nil
		}
		var failed []int
		for i := start; i < len(order); i++ {
			di := order[i]
			d := s.devs[di]
			symmetric := !d.multi && len(s.use[di]) == 0
			if symmetric && slices.Contains(failed, d.sig) {
				continue
			}
			if r.admin && s.usedByClaim(di, ci) || !r.admin && s.inUse(di) {
				continue
			}
			if d.multi {
				if fits, err := s.capacityLeft(claim, r, di); err != nil || !fits {
					if err != nil {
						return false, err
					}
					continue
				}
			}
			p, ok, err := s.tryDevice(ci, r, di, false)
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
			done, err := s.doSlot(ci, ri, r, k+1, order, i+1)
			if done {
				return true, nil
			}
			s.undo(ci, r, di, p)
			if err != nil {
				return false, err
			}
			if symmetric {
				failed = append(failed, d.sig)
			}
		}
		return false, nil
	}
	for di := start; di < len(s.devs); di++ {
		s.exam++
		if s.exam > s.lazyLimit {
			return false, errLazyBudget
		}
		if r.admin && s.usedByClaim(di, ci) || !r.admin && s.inUse(di) {
			s.reject(r, s.inUseWhy(ci, di), di)
			continue
		}
		ok, err := s.selectable(r, di)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		if s.features.ConsumableCapacity {
			if fits, err := s.capacityLeft(claim, r, di); err != nil || !fits {
				if err != nil {
					return false, err
				}
				continue
			}
		}
		p, ok, err := s.tryDevice(ci, r, di, false)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		done, err := s.doSlot(ci, ri, r, k+1, nil, di+1)
		if done {
			return true, nil
		}
		s.undo(ci, r, di, p)
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

func (s *search) inUse(di int) bool { return s.devs[di].inState || len(s.use[di]) > 0 }

func (s *search) usedByClaim(di, ci int) bool {
	return slices.Contains(s.use[di], int32(ci))
}

// reject records for Explain that request r could not take device di
// (-1: no device in particular) for the reason text.
func (s *search) reject(r *reqInfo, text string, di int) {
	m := s.rejects[r]
	if m == nil {
		m = map[string]*why{}
		s.rejects[r] = m
	}
	w := m[text]
	if w == nil {
		w = &why{devices: map[int]struct{}{}}
		m[text] = w
	}
	w.n++
	if di >= 0 {
		w.devices[di] = struct{}{}
	}
}

// inUseWhy says who holds device di, which claim ci cannot take: an
// allocated claim, an earlier claim of this call or another request of
// claim ci itself.
func (s *search) inUseWhy(ci, di int) string {
	if s.devs[di].inState {
		return "already allocated to another claim"
	}
	for _, h := range s.use[di] {
		if int(h) != ci {
			return fmt.Sprintf("taken by claim %s, earlier in this call", klog.KObj(s.claims[h]))
		}
	}
	holder := "another request"
	for _, c := range s.chosen[ci] {
		if c.dev == di {
			holder = "request " + c.req.fullName
			break
		}
	}
	return "taken by " + holder + " of this claim"
}

// counterWhy says why counter use cu of a device does not fit: the device
// needs more than the counter set has, the allocated claims use too much
// of it, or devices chosen in this call use up the rest.
func (s *search) counterWhy(cu counterUse) string {
	c := cu.c
	set := s.ct.sets[c]
	counter := strings.TrimPrefix(s.ct.names[c], set+"/")
	total, avail := s.ct.quantity(c, s.ct.total[c]), s.ct.quantity(c, s.ct.avail[c])
	switch {
	case cu.amt > s.ct.total[c]:
		return fmt.Sprintf("it consumes more %s than counter set %s has (%s)", counter, set, total)
	case cu.amt > s.ct.avail[c]:
		return fmt.Sprintf("counter set %s has too little %s left after the allocated claims (%s of %s)", set, counter, avail, total)
	case s.ct.avail[c] == s.ct.total[c]:
		return fmt.Sprintf("counter set %s has too little %s left: it is used up by devices already chosen in this call (%s in all)", set, counter, total)
	}
	return fmt.Sprintf("counter set %s has too little %s left: it is used up by devices already chosen in this call (%s left after the allocated claims, of %s)", set, counter, avail, total)
}

// constraintWhy says why constraint c rejects value v of a device.
func constraintWhy(c *constraint, v *attrVal) string {
	kind := "distinctAttribute"
	if c.match {
		kind = "matchAttribute"
	}
	switch {
	case !v.present:
		return fmt.Sprintf("it has no %s (constraint #%d, %s)", c.attr, c.index, kind)
	case c.list && v.set == nil:
		return fmt.Sprintf("its %s is not a list-type value (constraint #%d, %s)", c.attr, c.index, kind)
	case c.match:
		return fmt.Sprintf("its %s differs from that of the devices already chosen for the claim (constraint #%d, %s)", c.attr, c.index, kind)
	}
	return fmt.Sprintf("its %s is already taken by a device chosen for the claim (constraint #%d, %s)", c.attr, c.index, kind)
}

func (s *search) prune(r *reqInfo, why string) {
	m := s.pruneWhy[r]
	if m == nil {
		m = map[string]int{}
		s.pruneWhy[r] = m
	}
	m[why]++
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
		v := c.valFor(s, r, di)
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
