package inventory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
)

// ErrNeverSatisfiable is returned by Acquire for a demand that the whole
// inventory, with every unit free, cannot meet.
var ErrNeverSatisfiable = errors.New("the driver's devices can never meet the demand")

// Demand is what a scenario needs of the inventory.
type Demand struct {
	// Whole is how many whole devices with an identity the scenario's
	// claims may take at once.
	Whole int
	// SameAttribute, when set, makes the Whole devices share one value of
	// this attribute (a fully qualified name).
	SameAttribute resourceapi.QualifiedName
	// WholeWithoutCounters makes the Whole devices ones that consume no
	// counters: in v1.37.2 an admin-access allocation draws its device's
	// counters again, so a counter-consuming device that another claim
	// holds cannot be given to an administrator.
	WholeWithoutCounters bool
	// Partitionable is how many units with counter-consuming partitions
	// the scenario needs; each offers a profile in every one of Roles.
	Partitionable int
	Roles         []Role
	// PreCreated is how many units with partitions that consume no
	// counters the scenario needs.
	PreCreated int
	// Shared is how many shared devices (KindShared) with an identity the
	// scenario's claims share among themselves.
	Shared int
	// Exclusive makes the scenario run alone among those that hold units:
	// it disturbs every device (it restarts the driver, or stops it
	// mid-prepare). It holds every unit.
	Exclusive bool
}

// Empty says whether the demand needs no unit at all.
func (d Demand) Empty() bool {
	return !d.Exclusive && d.Whole == 0 && d.Partitionable == 0 && d.PreCreated == 0 && d.Shared == 0
}

// String describes the demand for messages.
func (d Demand) String() string {
	var parts []string
	if d.Exclusive {
		parts = append(parts, "every device (the scenario disturbs the driver)")
	}
	if d.Whole > 0 {
		s := fmt.Sprintf("%d whole device(s)", d.Whole)
		if d.SameAttribute != "" {
			s += fmt.Sprintf(" with the same %s", d.SameAttribute)
		}
		if d.WholeWithoutCounters {
			s += " that consume no counters"
		}
		parts = append(parts, s)
	}
	if d.Partitionable > 0 {
		s := fmt.Sprintf("%d partitionable device(s)", d.Partitionable)
		if len(d.Roles) > 0 {
			var roles []string
			for _, r := range d.Roles {
				roles = append(roles, string(r))
			}
			s += " with " + strings.Join(roles, " and ") + " partitions"
		}
		parts = append(parts, s)
	}
	if d.PreCreated > 0 {
		parts = append(parts, fmt.Sprintf("%d device(s) with pre-created partitions", d.PreCreated))
	}
	if d.Shared > 0 {
		parts = append(parts, fmt.Sprintf("%d shared device(s)", d.Shared))
	}
	if len(parts) == 0 {
		return "no device"
	}
	return strings.Join(parts, ", ")
}

// Lease is a set of units held by one scenario.
type Lease struct {
	pool  *Pool
	Owner string
	Units []Unit
	once  sync.Once
}

// Release gives the units back; calling it again does nothing.
func (l *Lease) Release() {
	if l == nil || l.pool == nil {
		return
	}
	l.once.Do(func() { l.pool.release(l) })
}

// WholeIdentities are the identities of the lease's whole devices, sorted.
func (l *Lease) WholeIdentities() []string {
	var out []string
	for _, u := range l.Units {
		out = append(out, u.Parents()...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// SharedIdentities are the identities of the lease's shared devices, sorted.
func (l *Lease) SharedIdentities() []string {
	var out []string
	for _, u := range l.Units {
		for _, d := range u.Shared {
			if d.Identity != "" {
				out = append(out, d.Identity)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Pool leases units to scenarios, first fit in the order they ask.
type Pool struct {
	units []Unit
	mu    sync.Mutex
	held  map[string]string // unit ID -> owner
	queue []*waiter
}

type waiter struct {
	owner  string
	demand Demand
	ready  chan []Unit
}

// NewPool returns a pool of the units, none leased.
func NewPool(units []Unit) *Pool {
	return &Pool{units: units, held: map[string]string{}}
}

// Units are every unit of the pool.
func (p *Pool) Units() []Unit { return slices.Clone(p.units) }

// Acquire blocks until the demand's units are free and leases them to
// owner; waiters are served first fit in the order they arrived (grant). An empty demand returns an empty
// lease at once. It returns ErrNeverSatisfiable when all units together
// cannot meet the demand, and ctx's error when ctx ends first.
func (p *Pool) Acquire(ctx context.Context, owner string, d Demand) (*Lease, error) {
	if d.Empty() {
		return &Lease{Owner: owner}, nil
	}
	if _, ok := plan(d, p.units); !ok {
		return nil, fmt.Errorf("%w: %s needs %s; the driver publishes %s", ErrNeverSatisfiable, owner, d, describeUnits(p.units))
	}
	w := &waiter{owner: owner, demand: d, ready: make(chan []Unit, 1)}
	p.mu.Lock()
	p.queue = append(p.queue, w)
	p.grant()
	p.mu.Unlock()
	select {
	case units := <-w.ready:
		return &Lease{pool: p, Owner: owner, Units: units}, nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		if i := slices.Index(p.queue, w); i >= 0 {
			p.queue = slices.Delete(p.queue, i, i+1)
			p.grant()
			return nil, fmt.Errorf("wait for %s: %w", d, ctx.Err())
		}
		// Granted meanwhile: give the units back.
		units := <-w.ready
		for _, u := range units {
			delete(p.held, u.ID)
		}
		p.grant()
		return nil, fmt.Errorf("wait for %s: %w", d, ctx.Err())
	}
}

// Holders says which owner holds which unit, for progress and diagnostics.
func (p *Pool) Holders() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.held))
	for k, v := range p.held {
		out[k] = v
	}
	return out
}

func (p *Pool) release(l *Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range l.Units {
		if p.held[u.ID] == l.Owner {
			delete(p.held, u.ID)
		}
	}
	p.grant()
}

// grant serves the waiters in arrival order, first fit: each one whose
// demand the free units meet is served, a waiter that must wait does not
// hold up those behind it. An exclusive waiter is served once no unit is
// held, so it runs after the scenarios that overtook it; the run is finite,
// so every waiter is served. Called with mu held.
func (p *Pool) grant() {
	for i := 0; i < len(p.queue); {
		w := p.queue[i]
		var units []Unit
		if w.demand.Exclusive {
			if len(p.held) > 0 {
				i++
				continue
			}
			units = slices.Clone(p.units)
		} else {
			var free []Unit
			for _, u := range p.units {
				if _, taken := p.held[u.ID]; !taken {
					free = append(free, u)
				}
			}
			var ok bool
			if units, ok = plan(w.demand, free); !ok {
				i++
				continue
			}
		}
		for _, u := range units {
			p.held[u.ID] = w.owner
		}
		p.queue = slices.Delete(p.queue, i, i+1)
		w.ready <- units
	}
}

// plan picks units from free that meet the demand (not Exclusive): first
// the partitionable and pre-created units, then whole devices from the
// remaining units, plain units before those with partitions.
func plan(d Demand, free []Unit) ([]Unit, bool) {
	taken := map[string]bool{}
	var out []Unit
	take := func(u Unit) { taken[u.ID] = true; out = append(out, u) }
	if d.Partitionable > 0 {
		n := 0
		for _, u := range free {
			if n < d.Partitionable && !taken[u.ID] && u.Partitionable() && offersRoles(u, d.Roles) {
				take(u)
				n++
			}
		}
		if n < d.Partitionable {
			return nil, false
		}
	}
	if d.PreCreated > 0 {
		n := 0
		for _, u := range free {
			if n < d.PreCreated && !taken[u.ID] && len(u.PreCreated()) > 0 {
				take(u)
				n++
			}
		}
		if n < d.PreCreated {
			return nil, false
		}
	}
	if d.Shared > 0 {
		n := 0
		for _, u := range free {
			if n < d.Shared && !taken[u.ID] && len(u.Shared) > 0 && len(u.Whole) == 0 && len(u.Partitions) == 0 {
				take(u)
				n++
			}
		}
		if n < d.Shared {
			return nil, false
		}
	}
	if d.Whole > 0 {
		units, ok := pickWhole(d, free, taken)
		if !ok {
			return nil, false
		}
		for _, u := range units {
			take(u)
		}
	}
	return out, true
}

func offersRoles(u Unit, roles []Role) bool {
	for _, r := range roles {
		if _, ok := u.Profile(r); !ok {
			return false
		}
	}
	return true
}

// pickWhole picks untaken units whose whole devices with an identity add up
// to d.Whole, all with one value of d.SameAttribute when it is set.
func pickWhole(d Demand, free []Unit, taken map[string]bool) ([]Unit, bool) {
	// Plain units first, so that partitionable ones stay free for the
	// scenarios that need their partitions.
	var order []Unit
	for _, rank := range []func(Unit) bool{
		func(u Unit) bool { return len(u.Partitions) == 0 },
		func(u Unit) bool { return len(u.Partitions) > 0 && !u.Partitionable() },
		func(u Unit) bool { return u.Partitionable() },
	} {
		for _, u := range free {
			if !taken[u.ID] && rank(u) {
				order = append(order, u)
			}
		}
	}
	value := func(dev Device) (string, bool) {
		if d.SameAttribute == "" {
			return "", true
		}
		a, ok := dev.Attributes[d.SameAttribute]
		if !ok {
			return "", false
		}
		return attributeValue(a), true
	}
	// Group the candidates by the attribute's value, in order.
	type group struct {
		units []Unit
		n     int
	}
	groups := map[string]*group{}
	for _, u := range order {
		counted := map[string]int{}
		for _, dev := range u.Whole {
			if dev.Identity == "" || d.WholeWithoutCounters && len(dev.Consumes) > 0 {
				continue
			}
			if v, ok := value(dev); ok {
				counted[v]++
			}
		}
		for _, v := range slices.Sorted(maps.Keys(counted)) {
			g := groups[v]
			if g == nil {
				g = &group{}
				groups[v] = g
			}
			if g.n < d.Whole {
				g.units = append(g.units, u)
				g.n += counted[v]
			}
			if g.n >= d.Whole {
				return g.units, true
			}
		}
	}
	return nil, false
}

// attributeValue is an attribute's value as text.
func attributeValue(a resourceapi.DeviceAttribute) string {
	switch {
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	case a.StringValue != nil:
		return "s:" + *a.StringValue
	case a.VersionValue != nil:
		return "v:" + *a.VersionValue
	}
	return ""
}

// describeUnits says what the units offer, for ErrNeverSatisfiable.
func describeUnits(units []Unit) string {
	whole, partitionable, pre, shared := 0, 0, 0, 0
	for _, u := range units {
		whole += len(u.Parents())
		if len(u.Shared) > 0 && len(u.Whole) == 0 && len(u.Partitions) == 0 {
			shared++
		}
		if u.Partitionable() {
			partitionable++
		}
		if len(u.PreCreated()) > 0 {
			pre++
		}
	}
	return fmt.Sprintf("%d whole devices with an identity, %d partitionable devices, %d devices with pre-created partitions, %d shared devices", whole, partitionable, pre, shared)
}
