package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
)

// errLazyBudget ends the lazy first phase; the complete phase takes over.
var errLazyBudget = errors.New("lazy phase budget used up")

// search is the state of one Allocate call, built and used in phases of
// a file or two each: prepare (prepare.go, with pools.go and devices.go
// for the node's pools and devices), constraints (constraints.go),
// candidates (candidates.go, selectors.go), bounds (bounds.go,
// packing.go), the search itself (search.go, place.go), explain
// (explain.go) and the results (results.go). The bounds read only the
// embedded view.
type search struct {
	// view is what the bounds and the packing order read: the devices,
	// the claims' requests and constraints, and the partial allocation.
	view
	// explainLog is what Explain reports from.
	explainLog

	a        *Allocator
	ctx      context.Context
	node     *v1.Node
	pools    []*pool
	features structured.Features
	selMemo  map[string][]int8

	// search state beyond the view
	allocCap map[int]structured.ConsumedCapacity
	chosen   [][]chosenDev

	full      bool // complete phase: candidate lists, bounds, symmetry
	exam      int  // candidate examinations in the lazy phase
	lazyLimit int
	steps     int
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
	if why := s.view.bound(0, 0, nil, 0, nil, 0); why != "" {
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
		s.explainLog.reset()
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
	s.explainLog.reset()
	return "", nil
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
				order = s.view.packingOrder(r)
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
			if why := s.view.bound(ci, ri, r, k, order, start); why != "" {
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
		if why := s.view.bound(ci, ri, r, k, order, start); why != "" {
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
