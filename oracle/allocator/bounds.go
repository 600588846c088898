package allocator

import (
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
)

// view is what the bounds (and the packing order) read of a search: the
// devices, counters and attribute values of the node, the claims with
// their requests and constraints, and the state of the partial allocation
// (devices taken, counters left, compatibility groups, the claim searched
// alone). The search embeds it and is the only one to change it; the
// bounds read it and never call back into the search (constraints and
// attribute values fill their caches on first use, nothing else changes).
type view struct {
	claims []*resourceapi.ResourceClaim
	devs   []*device
	ct     *counterTable
	attrs  *attrSource
	reqs   [][]*reqGroup
	cons   [][]*constraint

	use    [][]int32 // claims using each device exclusively, in order
	rem    []int64   // counters left
	compat [][]compatState
	only   int // >= 0: search only this claim (claimsAlone)
}

// bgroup is one block of the relaxation: need distinct devices out of cands.
type bgroup struct {
	need  int
	cands []int
	r     *reqInfo // the (first) request of the group
	reqs  int      // requests merged into the group
	multi int      // candidates that allow multiple allocations
}

// free reports whether device di could still be added for request r:
// not taken, counters left, compatibility groups admit it, and the
// constraints of r's claim accept its attribute values.
func (v *view) free(r *reqInfo, di int) bool {
	d := v.devs[di]
	if len(v.use[di]) > 0 {
		return false
	}
	if len(d.api.ConsumesCounters) > 0 {
		for _, cu := range d.counters {
			if v.rem[cu.c] < cu.amt {
				return false
			}
		}
		for _, cu := range d.compat {
			if !top(v.compat[cu.set]).admits(cu.groups) {
				return false
			}
		}
	}
	for _, k := range r.consIdx {
		c := v.cons[r.claim][k]
		if !c.accepts(c.valFor(v.attrs, r, di)) {
			return false
		}
	}
	return true
}

// bound checks a relaxation of what is left to place: the rest of request
// r (from order[start:]), the later requests of claim ci and all later
// claims. It returns why the rest cannot be placed, or "" if it may be.
// The relaxation ignores admin-access requests, lets devices with
// allowMultipleAllocations serve any number of requests, and replaces a
// firstAvailable request by its smallest alternative over the union of
// their candidates; everything else is exact: per-request counts, counter
// lower bounds and a bipartite matching of device slots to free devices.
func (v *view) bound(ci, ri int, r *reqInfo, k int, order []int, start int) string {
	var groups []bgroup
	// addGroup returns the index of the new group, -1 if it needs nothing.
	addGroup := func(need int, subs []*reqInfo, cands func(yield func(int))) int {
		if need <= 0 {
			return -1
		}
		g := bgroup{r: subs[0], reqs: 1}
		cands(func(di int) {
			if v.devs[di].multi {
				g.multi++
				return
			}
			for _, sr := range subs {
				if sr.candSet[di] && v.free(sr, di) {
					g.cands = append(g.cands, di)
					return
				}
			}
		})
		g.need = need - g.multi
		if g.need <= 0 {
			return -1
		}
		groups = append(groups, g)
		return len(groups) - 1
	}
	// Requests that share their candidate list (see buildCandidates) have
	// the same usable devices, given the same constraints of the same claim
	// (or none): one group with the needs summed, which is also the
	// stronger relaxation.
	type mergeKey struct {
		cands *int
		claim int // -1: no constraints apply
	}
	type mergeState struct{ group, multi int }
	var merged map[mergeKey]mergeState
	addRequest := func(g *reqGroup) {
		if len(g.subs) == 1 {
			sr := g.subs[0]
			if sr.admin {
				return
			}
			mergeable := len(sr.cands) > 0
			var key mergeKey
			if mergeable {
				key = mergeKey{&sr.cands[0], -1}
				if len(sr.consIdx) > 0 {
					key.claim = sr.claim
				}
				if m, ok := merged[key]; ok {
					if m.group >= 0 && sr.num > m.multi {
						groups[m.group].need += sr.num - m.multi
						groups[m.group].reqs++
					}
					return
				}
			}
			gi := addGroup(sr.num, g.subs, func(yield func(int)) {
				for _, di := range sr.cands {
					yield(di)
				}
			})
			if mergeable && gi >= 0 {
				if merged == nil {
					merged = map[mergeKey]mergeState{}
				}
				merged[key] = mergeState{gi, groups[gi].multi}
			}
			return
		}
		addGroup(g.minNum, g.subs, func(yield func(int)) {
			for di := range v.devs {
				for _, sr := range g.subs {
					if sr.candSet[di] {
						yield(di)
						break
					}
				}
			}
		})
	}
	nextReq := ri
	if r != nil {
		nextReq = ri + 1
		if !r.admin {
			if r.all {
				addGroup(len(r.allDevices)-k, []*reqInfo{r}, func(yield func(int)) {
					for _, di := range r.allDevices[k:] {
						yield(di)
					}
				})
			} else {
				addGroup(r.num-k, []*reqInfo{r}, func(yield func(int)) {
					for _, di := range order[start:] {
						yield(di)
					}
				})
			}
		}
	}
	for c := ci; c < len(v.claims); c++ {
		if v.only >= 0 && c != v.only {
			continue
		}
		from := 0
		if c == ci {
			from = nextReq
		}
		for _, g := range v.reqs[c][from:] {
			addRequest(g)
		}
	}
	total := 0
	for _, g := range groups {
		if len(g.cands) < g.need && g.reqs > 1 {
			return fmt.Sprintf("claim %s, request %s and %d identical request(s) after it: need %d more device(s), only %d usable (%d match their selectors)",
				klog.KObj(v.claims[g.r.claim]), g.r.fullName, g.reqs-1, g.need, len(g.cands), len(g.r.cands))
		}
		if len(g.cands) < g.need {
			return fmt.Sprintf("claim %s, request %s: needs %d more device(s), only %d usable (%d match its selectors)",
				klog.KObj(v.claims[g.r.claim]), g.r.fullName, g.need, len(g.cands), len(g.r.cands))
		}
		total += g.need
	}
	if why := v.counterBound(groups); why != "" {
		return why
	}
	if why := v.distinctBound(ci, nextReq, r, k, order, start); why != "" {
		return why
	}
	if got := matching(groups, len(v.devs)); got < total {
		return fmt.Sprintf("the remaining requests need %d distinct devices, at most %d of the usable devices can be assigned to them at once", total, got)
	}
	return ""
}

// counterBound sums, per counter, the smallest possible consumption of
// every group and compares it with what is left.
func (v *view) counterBound(groups []bgroup) string {
	if len(v.rem) == 0 {
		return ""
	}
	lb := make([]int64, len(v.rem))
	touched := false
	for _, g := range groups {
		amounts := map[int][]int64{}
		for _, di := range g.cands {
			for _, cu := range v.devs[di].counters {
				amounts[cu.c] = append(amounts[cu.c], cu.amt)
			}
		}
		for c, list := range amounts {
			zeros := len(g.cands) - len(list)
			if zeros >= g.need {
				continue
			}
			slices.Sort(list)
			for _, amt := range list[:g.need-zeros] {
				lb[c] += amt
			}
			touched = true
		}
	}
	if !touched {
		return ""
	}
	for c, need := range lb {
		if need > v.rem[c] {
			return fmt.Sprintf("counter set %s: the remaining requests need at least %s of counter %s, only %s left",
				v.ct.sets[c], v.ct.quantity(c, need), v.ct.names[c], v.ct.quantity(c, v.rem[c]))
		}
	}
	return ""
}

// matching returns the size of a maximum assignment of group slots to
// distinct elements of [0, domain) (augmenting paths): devices, or values
// of a distinctAttribute constraint.
func matching(groups []bgroup, domain int) int {
	var slotGroup []int
	for gi, g := range groups {
		for range g.need {
			slotGroup = append(slotGroup, gi)
		}
	}
	owner := make([]int, domain)
	for i := range owner {
		owner[i] = -1
	}
	visit := make([]bool, domain)
	var try func(slot int) bool
	try = func(slot int) bool {
		for _, x := range groups[slotGroup[slot]].cands {
			if visit[x] {
				continue
			}
			visit[x] = true
			if o := owner[x]; o < 0 || try(o) {
				owner[x] = slot
				return true
			}
		}
		return false
	}
	matched := 0
	for slot := range slotGroup {
		direct := false
		for _, x := range groups[slotGroup[slot]].cands {
			if owner[x] < 0 {
				owner[x] = slot
				direct = true
				break
			}
		}
		if direct {
			matched++
			continue
		}
		clear(visit)
		if try(slot) {
			matched++
		} else {
			return matched
		}
	}
	return matched
}

// distinctBound checks every distinctAttribute constraint of the claims
// still to place: each device still needed by a request the constraint
// applies to takes at least one attribute value of its own, so the slots
// must be matchable to distinct values that usable candidates still offer
// (values not yet taken in the claim, devices not taken by another claim
// unless admin access or shared). nextReq is the first request of claim ci
// after the partially placed request r (k devices of it placed, the rest
// from order[start:]).
func (v *view) distinctBound(ci, nextReq int, r *reqInfo, k int, order []int, start int) string {
	for c := ci; c < len(v.claims); c++ {
		if v.only >= 0 && c != v.only {
			continue
		}
		for _, con := range v.cons[c] {
			if con.match {
				continue
			}
			var groups []bgroup
			total := 0
			add := func(need int, subs []*reqInfo, cands func(sr *reqInfo) []int) {
				if need <= 0 {
					return
				}
				g := bgroup{need: need, r: subs[0]}
				seen := make([]bool, con.nvals)
				for _, sr := range subs {
					if !con.applies(sr) {
						continue
					}
					ids := con.idsFor(sr)
					for _, di := range cands(sr) {
						if !sr.admin && !v.devs[di].multi && len(v.use[di]) > 0 {
							continue
						}
						if !con.accepts(con.valFor(v.attrs, sr, di)) {
							continue
						}
						for _, id := range ids[di] {
							if !seen[id] {
								seen[id] = true
								g.cands = append(g.cands, int(id))
							}
						}
					}
				}
				groups = append(groups, g)
				total += need
			}
			from := 0
			if c == ci {
				from = nextReq
				if r != nil && con.applies(r) {
					if r.all {
						add(len(r.allDevices)-k, []*reqInfo{r}, func(*reqInfo) []int { return r.allDevices[k:] })
					} else {
						add(r.num-k, []*reqInfo{r}, func(*reqInfo) []int { return order[start:] })
					}
				}
			}
			for _, g := range v.reqs[c][from:] {
				need := -1
				for _, sr := range g.subs {
					n := 0
					if con.applies(sr) {
						n = sr.num
					}
					if need < 0 || n < need {
						need = n
					}
				}
				add(need, g.subs, func(sr *reqInfo) []int { return sr.cands })
			}
			if total == 0 {
				continue
			}
			if got := matching(groups, con.nvals); got < total {
				return fmt.Sprintf("claim %s, constraint #%d %s: the remaining requests need %d device(s) with distinct values, at most %d distinct values are usable",
					klog.KObj(v.claims[c]), con.index, con.kind(), total, got)
			}
		}
	}
	return ""
}
