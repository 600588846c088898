package inventory

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Kind says how the kit uses a device.
type Kind string

// The kinds of device.
const (
	// KindWhole is a device of the driver's main DeviceClass: a GPU, a NIC,
	// a plain device.
	KindWhole Kind = "whole"
	// KindPartition is a device of the driver's partition DeviceClass: it
	// names a profile and the identity of its parent.
	KindPartition Kind = "partition"
	// KindShared is a device of the driver's shared DeviceClass
	// (allowMultipleAllocations, KEP-5075): several claims of one scenario
	// share it, so a scenario leases it whole. It is a unit of its own
	// unless it draws on counters.
	KindShared Kind = "shared"
)

// Device is one published device as the kit sees it.
type Device struct {
	Kind Kind
	// Pool and Name identify the device as allocation results do.
	Pool, Name string
	// Identity is the value of the kind's identity attribute; empty when the
	// device publishes none (a partition created at prepare).
	Identity string
	// Parent is the identity of a partition's parent device; Profile names
	// the partition's profile. Empty for whole devices.
	Parent, Profile string
	// Attributes are the device's attributes, for demands that ask for
	// devices sharing a value.
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	// Consumes is what the device draws from its pool's counter sets.
	Consumes []resourceapi.DeviceCounterConsumption
}

// ID is pool/name, as in allocation results.
func (d Device) ID() string { return d.Pool + "/" + d.Name }

// CounterSets are a driver's counter sets by pool and set name.
type CounterSets map[string]map[string]resourceapi.CounterSet

// Unit is a set of devices that no device outside it interferes with.
type Unit struct {
	// ID names the unit: the ID of its first device in name order.
	ID string
	// Whole are its devices of KindWhole, Partitions those of
	// KindPartition, Shared those of KindShared, each sorted by ID.
	Whole, Partitions, Shared []Device
	// Profiles are its partition profiles that consume counters, by name,
	// with what fits of each.
	Profiles map[string]ProfileFit
	// counters are the unit's counter sets by pool/set.
	counters map[string]resourceapi.CounterSet
}

// ProfileFit is what fits of one partition profile in a unit.
type ProfileFit struct {
	Profile string
	// Devices are the unit's partitions of the profile (its placements).
	Devices []Device
	// Together is the largest number of them the unit's counters hold at
	// once.
	Together int
	// Exclusive says that each of them excludes every other partition of
	// the unit: with one allocated no other fits.
	Exclusive bool
}

// Parents are the identities of the unit's whole devices, sorted.
func (u Unit) Parents() []string {
	var out []string
	for _, d := range u.Whole {
		if d.Identity != "" {
			out = append(out, d.Identity)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Partitionable says whether the unit has partitions that draw on counters.
func (u Unit) Partitionable() bool { return len(u.Profiles) > 0 }

// PreCreated are the unit's partitions that consume no counters: they exist
// before any claim (pre-created MIG devices) and are allocated like whole
// devices.
func (u Unit) PreCreated() []Device {
	var out []Device
	for _, d := range u.Partitions {
		if len(d.Consumes) == 0 {
			out = append(out, d)
		}
	}
	return out
}

// Units divides devices into units. Devices of different pools never share
// a unit unless a partition names a parent of another pool.
func Units(devices []Device, sets CounterSets) []Unit {
	parent := make([]int, len(devices))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) { parent[find(a)] = find(b) }
	bySet := map[string]int{}
	byIdentity := map[string]int{}
	for i, d := range devices {
		if d.Kind == KindWhole && d.Identity != "" {
			if j, ok := byIdentity[d.Identity]; ok {
				union(i, j)
			} else {
				byIdentity[d.Identity] = i
			}
		}
		for _, c := range d.Consumes {
			k := d.Pool + "/" + c.CounterSet
			if j, ok := bySet[k]; ok {
				union(i, j)
			} else {
				bySet[k] = i
			}
		}
	}
	// Partitions join their parent's unit, and those of one parent share a
	// unit even when the parent is not published (a GPU in MIG mode).
	byParent := map[string]int{}
	for i, d := range devices {
		if d.Kind != KindPartition || d.Parent == "" {
			continue
		}
		if j, ok := byIdentity[d.Parent]; ok {
			union(i, j)
		}
		if j, ok := byParent[d.Parent]; ok {
			union(i, j)
		} else {
			byParent[d.Parent] = i
		}
	}
	groups := map[int][]Device{}
	for i, d := range devices {
		groups[find(i)] = append(groups[find(i)], d)
	}
	var units []Unit
	for _, members := range groups {
		units = append(units, newUnit(members, sets))
	}
	sort.Slice(units, func(i, j int) bool { return units[i].ID < units[j].ID })
	return units
}

func newUnit(members []Device, sets CounterSets) Unit {
	sort.Slice(members, func(i, j int) bool { return members[i].ID() < members[j].ID() })
	u := Unit{ID: members[0].ID(), Profiles: map[string]ProfileFit{}, counters: map[string]resourceapi.CounterSet{}}
	for _, d := range members {
		switch d.Kind {
		case KindWhole:
			u.Whole = append(u.Whole, d)
		case KindShared:
			u.Shared = append(u.Shared, d)
		default:
			u.Partitions = append(u.Partitions, d)
		}
		for _, c := range d.Consumes {
			if set, ok := sets[d.Pool][c.CounterSet]; ok {
				u.counters[d.Pool+"/"+c.CounterSet] = set
			}
		}
	}
	byProfile := map[string][]Device{}
	var consuming []Device
	for _, d := range u.Partitions {
		if len(d.Consumes) > 0 && d.Profile != "" {
			byProfile[d.Profile] = append(byProfile[d.Profile], d)
			consuming = append(consuming, d)
		}
	}
	for name, devs := range byProfile {
		u.Profiles[name] = ProfileFit{
			Profile:   name,
			Devices:   devs,
			Together:  u.maxTogether(devs),
			Exclusive: u.excludesAll(devs, consuming),
		}
	}
	return u
}

// usage is what some devices draw, by pool/set and counter.
type usage map[string]map[string]resource.Quantity

// add adds d's consumption; false when it exceeds a counter set of the
// unit or draws on a counter the set lacks (usage then holds d's part).
func (u Unit) add(use usage, d Device) bool {
	fits := true
	for _, c := range d.Consumes {
		k := d.Pool + "/" + c.CounterSet
		set, ok := u.counters[k]
		if !ok {
			return false
		}
		if use[k] == nil {
			use[k] = map[string]resource.Quantity{}
		}
		for name, v := range c.Counters {
			total, ok := set.Counters[name]
			q := use[k][name]
			q.Add(v.Value)
			use[k][name] = q
			if !ok || q.Cmp(total.Value) > 0 {
				fits = false
			}
		}
	}
	return fits
}

// fit says whether devices fit the unit's counters together.
func (u Unit) fit(devices ...Device) bool {
	use := usage{}
	for _, d := range devices {
		if !u.add(use, d) {
			return false
		}
	}
	return true
}

// searchBudget bounds maxTogether's search; beyond it the best set found so
// far is taken, a lower bound.
const searchBudget = 200_000

// maxTogether is the largest number of devs that fit together: a
// branch-and-bound search over subsets, bounded by searchBudget.
func (u Unit) maxTogether(devs []Device) int {
	best, steps := 0, 0
	var chosen []Device
	var search func(i int)
	search = func(i int) {
		steps++
		if len(chosen) > best {
			best = len(chosen)
		}
		if i == len(devs) || len(chosen)+len(devs)-i <= best || steps > searchBudget {
			return
		}
		chosen = append(chosen, devs[i])
		if u.fit(chosen...) {
			search(i + 1)
		}
		chosen = chosen[:len(chosen)-1]
		search(i + 1)
	}
	search(0)
	return best
}

// excludesAll says whether each of devs fits alone and fits together with
// no other device of others.
func (u Unit) excludesAll(devs, others []Device) bool {
	for _, d := range devs {
		if !u.fit(d) {
			return false
		}
		for _, e := range others {
			if e.ID() != d.ID() && u.fit(d, e) {
				return false
			}
		}
	}
	return true
}

// Role is what a scenario needs of a partition profile.
type Role string

// The partition roles.
const (
	// RoleSmallest: the profile of which the most partitions fit one unit
	// together, at least two.
	RoleSmallest Role = "smallest"
	// RoleHalf: a profile of which exactly two partitions fit one unit
	// together.
	RoleHalf Role = "half"
	// RoleExclusive: a profile each of whose partitions fits alone and
	// excludes every other partition of its unit.
	RoleExclusive Role = "exclusive"
)

// Roles are the roles in the order messages list them.
func Roles() []Role { return []Role{RoleSmallest, RoleHalf, RoleExclusive} }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, 0, 3)
	for _, r := range Roles() {
		names = append(names, string(r))
	}
	return "", fmt.Errorf("unknown partition role %q (known: %s)", s, strings.Join(names, ", "))
}

// Describe says what the role asks, for messages.
func (r Role) Describe() string {
	switch r {
	case RoleSmallest:
		return "the profile of which the most partitions fit one device together (at least 2)"
	case RoleHalf:
		return "a profile of which exactly 2 partitions fit one device together"
	case RoleExclusive:
		return "a profile each of whose partitions excludes every other partition of its device"
	}
	return string(r)
}

// Profile returns the unit's profile in the role; false when it has none.
// Among several candidates RoleSmallest takes the one with the most
// partitions together, the others the one with the fewest placements; ties
// go to the name that sorts first.
func (u Unit) Profile(r Role) (ProfileFit, bool) {
	var candidates []ProfileFit
	for _, p := range u.Profiles {
		switch {
		case r == RoleSmallest && p.Together >= 2,
			r == RoleHalf && p.Together == 2,
			r == RoleExclusive && p.Exclusive:
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return ProfileFit{}, false
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if r == RoleSmallest && a.Together != b.Together {
			return a.Together > b.Together
		}
		if r != RoleSmallest && len(a.Devices) != len(b.Devices) {
			return len(a.Devices) < len(b.Devices)
		}
		return a.Profile < b.Profile
	})
	return candidates[0], true
}

// ProfileSummary lists the unit's profiles with what fits, for messages:
// "1g.5gb: 7 together; 7g.40gb: 1 together, exclusive".
func (u Unit) ProfileSummary() string {
	if len(u.Profiles) == 0 {
		return "no counter-consuming partitions"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(u.Profiles)) {
		p := u.Profiles[name]
		s := fmt.Sprintf("%s: %d together", name, p.Together)
		if p.Exclusive {
			s += ", exclusive"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
