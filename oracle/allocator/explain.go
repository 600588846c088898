package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/klog/v2"
)

// explainLog is the bookkeeping Explain reports from: the deepest request
// the search reached, why requests could not take devices and why the
// bounds cut branches, and, when a check before the search proper rules
// the claims out, why (rootWhy).
type explainLog struct {
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

// reject records for Explain that request r could not take device di
// (-1: no device in particular) for the reason text.
func (l *explainLog) reject(r *reqInfo, text string, di int) {
	m := l.rejects[r]
	if m == nil {
		m = map[string]*why{}
		l.rejects[r] = m
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

// prune records for Explain that a bound cut a branch of request r.
func (l *explainLog) prune(r *reqInfo, why string) {
	m := l.pruneWhy[r]
	if m == nil {
		m = map[string]int{}
		l.pruneWhy[r] = m
	}
	m[why]++
}

// reset clears what the search records as it goes: the deepest request,
// the rejections and the prunings.
func (l *explainLog) reset() {
	l.deepClaim, l.deepReq = -1, -1
	clear(l.rejects)
	clear(l.pruneWhy)
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

// selectorMismatch is the reason of devices of a request's class that its
// selectors do not select.
const selectorMismatch = "in its device class, but its selectors do not select it"

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
		// Devices of the request's class that its own selectors turned
		// down, as far as the search evaluated them.
		if r.classMemo != nil && r.selMemo != nil {
			for di := range s.devs {
				if r.classMemo[di] == 1 && r.selMemo[di] == 2 {
					rs := get(selectorMismatch)
					rs.devices[di] = struct{}{}
					rs.n++
				}
			}
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
			if v := c.val(s.attrs, di); v.present && v.scalar != "" && slices.ContainsFunc(reqs, func(r *reqInfo) bool { return s.mayMatch(r, di) }) {
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
