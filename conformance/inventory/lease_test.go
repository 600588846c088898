package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func ids(units []Unit) []string {
	var out []string
	for _, u := range units {
		out = append(out, u.ID)
	}
	return out
}

func testPool(t *testing.T) *Pool {
	t.Helper()
	devs, sets := node()
	return NewPool(Units(devs, sets))
}

// acquireNow acquires a demand that must be granted at once.
func acquireNow(t *testing.T, p *Pool, owner string, d Demand) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l, err := p.Acquire(ctx, owner, d)
	if err != nil {
		t.Fatalf("%s: acquire %s: %v", owner, d, err)
	}
	return l
}

// acquireLater starts an Acquire that must wait, and returns its outcome.
func acquireLater(t *testing.T, p *Pool, owner string, d Demand) <-chan *Lease {
	t.Helper()
	ch := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(context.Background(), owner, d)
		if err != nil {
			t.Errorf("%s: acquire %s: %v", owner, d, err)
		}
		ch <- l
	}()
	select {
	case l := <-ch:
		t.Fatalf("%s: granted %v at once, want it to wait", owner, ids(l.Units))
	case <-time.After(50 * time.Millisecond):
	}
	return ch
}

func granted(t *testing.T, owner string, ch <-chan *Lease) *Lease {
	t.Helper()
	select {
	case l := <-ch:
		return l
	case <-time.After(2 * time.Second):
		t.Fatalf("%s: not granted after the release", owner)
	}
	return nil
}

func TestPlan(t *testing.T) {
	p := testPool(t)
	for _, tc := range []struct {
		demand Demand
		want   []string
	}{
		// Plain GPUs first: the partitionable ones stay free.
		{Demand{Whole: 2}, []string{"n/gpu-0", "n/gpu-1"}},
		{Demand{Whole: 4}, []string{"n/gpu-0", "n/gpu-1", "n/gpu-2", "n/gpu-4"}},
		// Without counters: only the plain GPUs count.
		{Demand{Whole: 3, WholeWithoutCounters: true}, []string{"n/gpu-0", "n/gpu-1", "n/gpu-2"}},
		// Two on one NUMA node.
		{Demand{Whole: 2, SameAttribute: "resource.kubernetes.io/numaNode"}, []string{"n/gpu-0", "n/gpu-1"}},
		{Demand{Partitionable: 2, Roles: []Role{RoleHalf}}, []string{"n/gpu-4", "n/gpu-5"}},
		{Demand{Partitionable: 1, Roles: []Role{RoleSmallest, RoleExclusive}, Whole: 1}, []string{"n/gpu-4", "n/gpu-0"}},
		{Demand{PreCreated: 1}, []string{"n/gpu-7-mig-gi1"}},
	} {
		got, ok := plan(tc.demand, p.Units())
		if !ok || !slices.Equal(ids(got), tc.want) {
			t.Errorf("plan(%s) = %v (%t), want %v", tc.demand, ids(got), ok, tc.want)
		}
	}
	for _, d := range []Demand{
		{Whole: 3, SameAttribute: "resource.kubernetes.io/numaNode"},
		{Whole: 6},
		{Whole: 4, WholeWithoutCounters: true},
		{Partitionable: 3},
		{PreCreated: 2},
	} {
		if got, ok := plan(d, p.Units()); ok {
			t.Errorf("plan(%s) = %v, want none", d, ids(got))
		}
	}
}

// TestPlanShared: shared devices (a NIC's physical function that claims
// share by bandwidth) are leased as units of their own, never as whole
// devices, and a whole device is never leased as a shared one.
func TestPlanShared(t *testing.T) {
	devs := []Device{
		{Kind: KindWhole, Pool: "n", Name: "vf-0", Identity: "0000:41:00.2"},
		{Kind: KindWhole, Pool: "n", Name: "vf-1", Identity: "0000:41:00.3"},
		{Kind: KindShared, Pool: "n", Name: "pf-0", Identity: "0000:41:00.0"},
		{Kind: KindShared, Pool: "n", Name: "pf-1", Identity: "0000:42:00.0"},
	}
	units := Units(devs, nil)
	for _, tc := range []struct {
		demand Demand
		want   []string
	}{
		{Demand{Shared: 1}, []string{"n/pf-0"}},
		{Demand{Shared: 2, Whole: 1}, []string{"n/pf-0", "n/pf-1", "n/vf-0"}},
		{Demand{Whole: 2}, []string{"n/vf-0", "n/vf-1"}},
	} {
		got, ok := plan(tc.demand, units)
		if !ok || !slices.Equal(ids(got), tc.want) {
			t.Errorf("plan(%s) = %v (%t), want %v", tc.demand, ids(got), ok, tc.want)
		}
	}
	for _, d := range []Demand{{Shared: 3}, {Whole: 3}} {
		if got, ok := plan(d, units); ok {
			t.Errorf("plan(%s) = %v, want none", d, ids(got))
		}
	}
	l := acquireNow(t, NewPool(units), "s", Demand{Shared: 2})
	if got := l.SharedIdentities(); !slices.Equal(got, []string{"0000:41:00.0", "0000:42:00.0"}) {
		t.Errorf("shared identities %v", got)
	}
	if got := l.WholeIdentities(); len(got) != 0 {
		t.Errorf("a lease of shared devices has whole identities %v", got)
	}
}

func TestAcquireWaitsForOverlappingDemands(t *testing.T) {
	p := testPool(t)
	a := acquireNow(t, p, "a", Demand{Partitionable: 2, Roles: []Role{RoleHalf}})
	// Whole devices do not overlap a's units.
	b := acquireNow(t, p, "b", Demand{Whole: 3})
	// c needs a partitionable unit: it waits for a.
	c := acquireLater(t, p, "c", Demand{Partitionable: 1})
	// d's demand is free: it does not wait behind c.
	acquireNow(t, p, "d", Demand{PreCreated: 1}).Release()
	// e waits for the units c will have: behind c, first fit.
	e := acquireLater(t, p, "e", Demand{Partitionable: 2})
	if got := p.Holders()["n/gpu-4"]; got != "a" {
		t.Errorf("n/gpu-4 held by %q, want a", got)
	}
	a.Release()
	a.Release() // idempotent
	lc := granted(t, "c", c)
	if !slices.Equal(ids(lc.Units), []string{"n/gpu-4"}) {
		t.Errorf("c got %v, want n/gpu-4", ids(lc.Units))
	}
	select {
	case <-e:
		t.Fatal("e granted while c holds one of the two partitionable units")
	case <-time.After(50 * time.Millisecond):
	}
	lc.Release()
	granted(t, "e", e).Release()
	b.Release()
	if h := p.Holders(); len(h) != 0 {
		t.Errorf("after every release, held: %v", h)
	}
}

func TestExclusiveRunsAlone(t *testing.T) {
	p := testPool(t)
	a := acquireNow(t, p, "a", Demand{Whole: 1})
	x := acquireLater(t, p, "x", Demand{Exclusive: true})
	// Demands that fit overtake the exclusive waiter.
	b := acquireNow(t, p, "b", Demand{Whole: 1})
	// An empty demand never waits.
	acquireNow(t, p, "api-only", Demand{}).Release()
	a.Release()
	select {
	case <-x:
		t.Fatal("x granted while b holds a unit")
	case <-time.After(50 * time.Millisecond):
	}
	b.Release()
	lx := granted(t, "x", x)
	if len(lx.Units) != len(p.Units()) {
		t.Errorf("x holds %d units, want all %d", len(lx.Units), len(p.Units()))
	}
	c := acquireLater(t, p, "c", Demand{Whole: 1})
	lx.Release()
	granted(t, "c", c).Release()
}

func TestAcquireRefusesWhatCanNeverBeMet(t *testing.T) {
	p := testPool(t)
	_, err := p.Acquire(context.Background(), "greedy", Demand{Whole: 9})
	if !errors.Is(err, ErrNeverSatisfiable) {
		t.Fatalf("err = %v, want ErrNeverSatisfiable", err)
	}
	want := "greedy needs 9 whole device(s); the driver publishes 5 whole devices with an identity, 2 partitionable devices, 1 devices with pre-created partitions, 0 shared devices"
	if got := err.Error(); got != fmt.Sprintf("%v: %s", ErrNeverSatisfiable, want) {
		t.Errorf("message: %s", got)
	}
}

func TestAcquireGivesUpWithItsContext(t *testing.T) {
	p := testPool(t)
	a := acquireNow(t, p, "a", Demand{PreCreated: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx, "b", Demand{PreCreated: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	// b left the queue: c is served once a releases.
	c := acquireLater(t, p, "c", Demand{PreCreated: 1})
	a.Release()
	granted(t, "c", c).Release()
}
