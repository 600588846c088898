package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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
				con.internValues(s)
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
		v := c.valFor(s, r, di)
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
					writeVal(c.val(s, di))
				}
				for _, expr := range c.exprs {
					writeVal(s.derivedVal(expr, di))
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
func (s *search) free(r *reqInfo, di int) bool {
	d := s.devs[di]
	if len(s.use[di]) > 0 {
		return false
	}
	if len(d.api.ConsumesCounters) > 0 {
		for _, cu := range d.counters {
			if s.rem[cu.c] < cu.amt {
				return false
			}
		}
		for _, cu := range d.compat {
			if !top(s.compat[cu.set]).admits(cu.groups) {
				return false
			}
		}
	}
	for _, k := range r.consIdx {
		c := s.cons[r.claim][k]
		if !c.accepts(c.valFor(s, r, di)) {
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
func (s *search) bound(ci, ri int, r *reqInfo, k int, order []int, start int) string {
	var groups []bgroup
	// addGroup returns the index of the new group, -1 if it needs nothing.
	addGroup := func(need int, subs []*reqInfo, cands func(yield func(int))) int {
		if need <= 0 {
			return -1
		}
		g := bgroup{r: subs[0], reqs: 1}
		cands(func(di int) {
			if s.devs[di].multi {
				g.multi++
				return
			}
			for _, sr := range subs {
				if sr.candSet[di] && s.free(sr, di) {
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
			for di := range s.devs {
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
	for c := ci; c < len(s.claims); c++ {
		if s.only >= 0 && c != s.only {
			continue
		}
		from := 0
		if c == ci {
			from = nextReq
		}
		for _, g := range s.reqs[c][from:] {
			addRequest(g)
		}
	}
	total := 0
	for _, g := range groups {
		if len(g.cands) < g.need && g.reqs > 1 {
			return fmt.Sprintf("claim %s, request %s and %d identical request(s) after it: need %d more device(s), only %d usable (%d match their selectors)",
				klog.KObj(s.claims[g.r.claim]), g.r.fullName, g.reqs-1, g.need, len(g.cands), len(g.r.cands))
		}
		if len(g.cands) < g.need {
			return fmt.Sprintf("claim %s, request %s: needs %d more device(s), only %d usable (%d match its selectors)",
				klog.KObj(s.claims[g.r.claim]), g.r.fullName, g.need, len(g.cands), len(g.r.cands))
		}
		total += g.need
	}
	if why := s.counterBound(groups); why != "" {
		return why
	}
	if why := s.distinctBound(ci, nextReq, r, k, order, start); why != "" {
		return why
	}
	if got := s.matching(groups, len(s.devs)); got < total {
		return fmt.Sprintf("the remaining requests need %d distinct devices, at most %d of the usable devices can be assigned to them at once", total, got)
	}
	return ""
}

// counterBound sums, per counter, the smallest possible consumption of
// every group and compares it with what is left.
func (s *search) counterBound(groups []bgroup) string {
	if len(s.rem) == 0 {
		return ""
	}
	lb := make([]int64, len(s.rem))
	touched := false
	for _, g := range groups {
		amounts := map[int][]int64{}
		for _, di := range g.cands {
			for _, cu := range s.devs[di].counters {
				amounts[cu.c] = append(amounts[cu.c], cu.amt)
			}
		}
		for c, list := range amounts {
			zeros := len(g.cands) - len(list)
			if zeros >= g.need {
				continue
			}
			slices.Sort(list)
			for _, v := range list[:g.need-zeros] {
				lb[c] += v
			}
			touched = true
		}
	}
	if !touched {
		return ""
	}
	for c, v := range lb {
		if v > s.rem[c] {
			return fmt.Sprintf("counter set %s: the remaining requests need at least %s of counter %s, only %s left",
				s.ct.sets[c], s.ct.quantity(c, v), s.ct.names[c], s.ct.quantity(c, s.rem[c]))
		}
	}
	return ""
}

// matching returns the size of a maximum assignment of group slots to
// distinct elements of [0, domain) (augmenting paths): devices, or values
// of a distinctAttribute constraint.
func (s *search) matching(groups []bgroup, domain int) int {
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
func (s *search) distinctBound(ci, nextReq int, r *reqInfo, k int, order []int, start int) string {
	for c := ci; c < len(s.claims); c++ {
		if s.only >= 0 && c != s.only {
			continue
		}
		for _, con := range s.cons[c] {
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
						if !sr.admin && !s.devs[di].multi && len(s.use[di]) > 0 {
							continue
						}
						if !con.accepts(con.valFor(s, sr, di)) {
							continue
						}
						for _, v := range ids[di] {
							if !seen[v] {
								seen[v] = true
								g.cands = append(g.cands, int(v))
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
			for _, g := range s.reqs[c][from:] {
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
			if got := s.matching(groups, con.nvals); got < total {
				return fmt.Sprintf("claim %s, constraint #%d %s: the remaining requests need %d device(s) with distinct values, at most %d distinct values are usable",
					klog.KObj(s.claims[c]), con.index, con.kind(), total, got)
			}
		}
	}
	return ""
}

// packingOrder orders the candidates of r for ModePacking: devices drawing
// from counter sets already in use first (fullest first), then devices
// that share the fewest attribute values with free devices this request
// cannot use (those are the partners other requests will need), then in
// published order.
func (s *search) packingOrder(r *reqInfo) []int {
	partners := map[string]int{}
	for di := range s.devs {
		if r.candSet[di] || len(s.use[di]) > 0 || s.devs[di].inState {
			continue
		}
		for _, k := range s.attrKeys(di) {
			partners[k]++
		}
	}
	type scored struct {
		di             int
		fresh          int
		fill, partners int64
	}
	list := make([]scored, 0, len(r.cands))
	for _, di := range r.cands {
		d := s.devs[di]
		sc := scored{di: di, fill: 1000}
		if len(d.counters) > 0 {
			sc.fresh = 1
			for _, cu := range d.counters {
				if s.setInUse(cu.c) {
					sc.fresh = 0
				}
				if t := s.ct.total[cu.c]; t > 0 {
					sc.fill = min(sc.fill, s.rem[cu.c]*1000/t)
				}
			}
		}
		for _, k := range s.attrKeys(di) {
			sc.partners += int64(partners[k])
		}
		list = append(list, sc)
	}
	slices.SortStableFunc(list, func(a, b scored) int {
		if c := cmp.Compare(a.fresh, b.fresh); c != 0 {
			return c
		}
		if c := cmp.Compare(a.fill, b.fill); c != 0 {
			return c
		}
		if c := cmp.Compare(a.partners, b.partners); c != 0 {
			return c
		}
		return cmp.Compare(a.di, b.di)
	})
	out := make([]int, len(list))
	for i, sc := range list {
		out[i] = sc.di
	}
	return out
}

// setInUse reports whether any counter of the counter set of counter c has
// been consumed, by allocated claims or by this search.
func (s *search) setInUse(c int) bool {
	for i := range s.rem {
		if s.ct.sets[i] == s.ct.sets[c] && s.rem[i] < s.ct.total[i] {
			return true
		}
	}
	return false
}

func (s *search) attrKeys(di int) []string {
	d := s.devs[di]
	if d.attrKeys != nil {
		return d.attrKeys
	}
	keys := []string{}
	for name, a := range d.api.Attributes {
		v := makeAttrVal(&a)
		for _, x := range v.set {
			keys = append(keys, string(name)+"="+x)
		}
	}
	slices.Sort(keys)
	d.attrKeys = keys
	return keys
}

// explain says why the search found nothing.
func (s *search) explain() string {
	var parts []string
	for _, p := range s.pools {
		switch {
		case p.incomplete:
			parts = append(parts, fmt.Sprintf("pool %s is incomplete (being updated) and was not used", p.key))
		case p.invalid:
			parts = append(parts, fmt.Sprintf("pool %s is invalid (%s) and was not used", p.key, p.invalidReason))
		}
	}
	if len(s.devs) == 0 {
		parts = append(parts, "no devices of a complete, valid pool are available on node "+s.node.Name)
	}
	switch {
	case s.rootWhy != "":
		parts = append(parts, s.rootWhy)
	case s.deepClaim >= 0:
		parts = append(parts, s.requestWhy())
	}
	if len(parts) == 0 {
		return "no allocation found"
	}
	return strings.Join(parts, "; ")
}

// requestWhy says which request of the deepest claim the search reached
// could not be satisfied, with the reasons that kept the most devices (or,
// for reasons about no device in particular, applied most often) from it,
// each naming those devices.
func (s *search) requestWhy() string {
	g := s.reqs[s.deepClaim][s.deepReq]
	line := fmt.Sprintf("claim %s, request %s could not be satisfied", klog.KObj(s.claims[s.deepClaim]), g.subs[0].nameForExplain())
	type reason struct {
		text    string
		devices map[int]struct{}
		n       int
	}
	byText := map[string]*reason{}
	get := func(text string) *reason {
		r := byText[text]
		if r == nil {
			r = &reason{text: text, devices: map[int]struct{}{}}
			byText[text] = r
		}
		return r
	}
	for _, r := range g.subs {
		for text, w := range s.rejects[r] {
			rs := get(text)
			rs.n += w.n
			for di := range w.devices {
				rs.devices[di] = struct{}{}
			}
		}
		for text, n := range s.pruneWhy[r] {
			get(text).n += n
		}
	}
	unmet := s.unmetMatches(s.deepClaim)
	if len(byText) == 0 && len(unmet) == 0 {
		return line + ": no device matches its class and request selectors"
	}
	weight := func(r *reason) int {
		if len(r.devices) > 0 {
			return len(r.devices)
		}
		return r.n
	}
	reasons := slices.SortedFunc(maps.Values(byText), func(a, b *reason) int {
		if c := cmp.Compare(weight(b), weight(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.text, b.text)
	})
	parts := unmet
	for _, r := range reasons[:min(3, len(reasons))] {
		if len(r.devices) == 0 {
			parts = append(parts, r.text)
			continue
		}
		parts = append(parts, s.deviceList(r.devices)+": "+r.text)
	}
	return line + ": " + strings.Join(parts, "; ")
}

// deviceList names devices in published order, at most three and how many
// more: "device gpu-3", "devices gpu-0, gpu-1, gpu-2 and 3 more".
func (s *search) deviceList(devices map[int]struct{}) string {
	order := slices.Sorted(maps.Keys(devices))
	names := make([]string, 0, 3)
	for _, di := range order[:min(3, len(order))] {
		names = append(names, s.devs[di].api.Name)
	}
	list := strings.Join(names, ", ")
	if more := len(order) - len(names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	if len(order) == 1 {
		return "device " + list
	}
	return "devices " + list
}

// unmetMatches says which matchAttribute constraints of claim ci cannot be
// met at all: the requests they apply to need more devices than there are
// free devices sharing any one value of the attribute that may match one
// of those requests. It judges constraints on a device attribute (not a
// derived one) with scalar values, over requests with a fixed count, and
// evaluates no selector: a device whose selectors the search never
// evaluated counts as matching, so "cannot" is never wrong.
func (s *search) unmetMatches(ci int) []string {
	var out []string
	for _, c := range s.cons[ci] {
		if !c.match || c.list || len(c.exprs) > 0 {
			continue
		}
		need := 0
		var reqs []*reqInfo
		var names []string
		judged := true
		for _, g := range s.reqs[ci] {
			if !slices.ContainsFunc(g.subs, c.applies) {
				continue
			}
			if len(g.subs) != 1 || g.subs[0].all {
				judged = false
				break
			}
			need += g.subs[0].num
			reqs = append(reqs, g.subs[0])
			names = append(names, g.subs[0].fullName)
		}
		if !judged || need < 2 {
			continue
		}
		perValue := map[string]int{}
		for di := range s.devs {
			if v := c.val(s, di); v.present && v.scalar != "" && slices.ContainsFunc(reqs, func(r *reqInfo) bool { return s.mayMatch(r, di) }) {
				perValue[v.scalar]++
			}
		}
		most := 0
		for _, n := range perValue {
			most = max(most, n)
		}
		if most < need {
			out = append(out, fmt.Sprintf("constraint #%d (matchAttribute %s) cannot be met: request(s) %s need %d devices with one value of it, no value has more than %d free devices that may match them",
				c.index, c.attr, strings.Join(names, ", "), need, most))
		}
	}
	return out
}

// mayMatch reports whether device di may serve request r, from what the
// search knows without evaluating a selector: free (or admin access),
// available on the node, and not known to fail the class's or the
// request's selectors.
func (s *search) mayMatch(r *reqInfo, di int) bool {
	d := s.devs[di]
	switch {
	case d.inState && !r.admin, d.nodeErr == nil && !d.nodeOK,
		!s.features.DeviceBindingAndStatus && len(d.api.BindingConditions) > 0:
		return false
	}
	return (r.classMemo == nil || r.classMemo[di] != 2) && (r.selMemo == nil || r.selMemo[di] != 2)
}

func (r *reqInfo) nameForExplain() string {
	if r.parent != "" {
		return r.parent
	}
	return r.name
}

func (t *counterTable) quantity(c int, v int64) string {
	return resource.NewScaledQuantity(v, t.scale[c]).String()
}
