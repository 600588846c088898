package allocator

import (
	"cmp"
	"slices"
)

// packingOrder orders the candidates of r for ModePacking: devices drawing
// from counter sets already in use first (fullest first), then devices
// that share the fewest attribute values with free devices this request
// cannot use (those are the partners other requests will need), then in
// published order.
func (v *view) packingOrder(r *reqInfo) []int {
	partners := map[string]int{}
	for di := range v.devs {
		if r.candSet[di] || len(v.use[di]) > 0 || v.devs[di].inState {
			continue
		}
		for _, k := range v.devs[di].packingKeys() {
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
		d := v.devs[di]
		sc := scored{di: di, fill: 1000}
		if len(d.counters) > 0 {
			sc.fresh = 1
			for _, cu := range d.counters {
				if v.setInUse(cu.c) {
					sc.fresh = 0
				}
				if t := v.ct.total[cu.c]; t > 0 {
					sc.fill = min(sc.fill, v.rem[cu.c]*1000/t)
				}
			}
		}
		for _, k := range v.devs[di].packingKeys() {
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
func (v *view) setInUse(c int) bool {
	for i := range v.rem {
		if v.ct.sets[i] == v.ct.sets[c] && v.rem[i] < v.ct.total[i] {
			return true
		}
	}
	return false
}

// packingKeys returns the device's attribute values as "name=value" keys,
// sorted, made on first use.
func (d *device) packingKeys() []string {
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
