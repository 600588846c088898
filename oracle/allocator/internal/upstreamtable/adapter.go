//go:build drakit_upstreamtable

// This file is not compiled in drakit's module. Run copies it, as
// adapter_test.go of the package structured/drakitupstreamtable, into a
// temporary copy of k8s.io/dynamic-resource-allocation, where upstream's
// internal packages can be imported, and builds it with the tag
// drakit_upstreamtable.

package drakitupstreamtable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured/internal"
	"k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting"
	"k8s.io/dynamic-resource-allocation/structured/internal/experimental"
	"k8s.io/dynamic-resource-allocation/structured/internal/incubating"
	"k8s.io/dynamic-resource-allocation/structured/internal/stable"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/check"
)

// minCheckedResults is well below the number of table cases whose Allocate
// returns a result in any run (92 for the stable variant, which supports
// the fewest features; the table's own assertions judge every case); it
// guards against the table silently running nothing through the checker.
const minCheckedResults = 50

// summaryEnv names the file that TestMain writes the per-run counts to, for
// Run to log (go test shows nothing of a passing package but "ok").
const summaryEnv = "DRAKIT_UPSTREAMTABLE_SUMMARY"

// newFunc is the constructor the table takes.
type newFunc = func(ctx context.Context, features internal.Features, state internal.AllocatedState,
	classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error)

// allocate is what the wrapper needs of the allocator under test.
type allocate interface {
	Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error)
}

// tableRun counts what one run of the table did.
type tableRun struct {
	name         string
	checked      int // results the checker judged
	statsSkipped int // cases that passed all but the allocateOne count
}

var (
	summaryMu sync.Mutex
	summary   []*tableRun
)

// checked wraps an allocator so that every result goes through drakit's
// independent checker before the table compares it with upstream's
// expectation. It reports through the table case's *testing.T, which it
// takes from the context: the table gives newAllocator and Allocate a
// ktesting context of the case.
type checked struct {
	run     *tableRun
	t       *testing.T
	inner   allocate
	channel internal.AllocatorChannel
	in      check.Input // without Node and Claims
}

func newChecked(ctx context.Context, run *tableRun, features internal.Features, state internal.AllocatedState,
	classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice) (*checked, error) {
	t, err := testingT(ctx)
	if err != nil {
		return nil, err
	}
	classList, err := classes.List()
	if err != nil {
		return nil, fmt.Errorf("list classes for the checker: %w", err)
	}
	in := check.Input{
		Features: features,
		AllocatedState: internal.AllocatedState{
			AllocatedDevices:         state.AllocatedDevices.Clone(),
			AllocatedSharedDeviceIDs: state.AllocatedSharedDeviceIDs.Clone(),
			AggregatedCapacity:       state.AggregatedCapacity.Clone(),
		},
	}
	for _, c := range classList {
		in.Classes = append(in.Classes, c.DeepCopy())
	}
	for _, s := range slices {
		in.Slices = append(in.Slices, s.DeepCopy())
	}
	return &checked{run: run, t: t, in: in}, nil
}

// testingT returns the *testing.T behind the ktesting logger of ctx.
func testingT(ctx context.Context) (*testing.T, error) {
	u, ok := klog.FromContext(ctx).GetSink().(ktesting.Underlier)
	if !ok {
		return nil, errors.New("drakit adapter: the table's context has no ktesting logger, so results cannot be checked")
	}
	t, ok := u.GetUnderlying().(*testing.T)
	if !ok {
		return nil, fmt.Errorf("drakit adapter: the table's ktesting logger writes to %T, not a *testing.T", u.GetUnderlying())
	}
	return t, nil
}

func (c *checked) Channel() internal.AllocatorChannel { return c.channel }

func (c *checked) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	in := c.in
	in.Node = node.DeepCopy()
	for _, claim := range claims {
		in.Claims = append(in.Claims, claim.DeepCopy())
	}
	results, err := c.inner.Allocate(ctx, node, claims)
	if err == nil && results != nil {
		c.run.checked++
		// Before the table replaces share IDs: the checker sees the
		// results exactly as the allocator returned them.
		if cerr := check.Check(context.Background(), in, results); cerr != nil {
			c.t.Errorf("%s: drakit's checker rejects the result:\n%v", c.run.name, cerr)
		}
	}
	return results, err
}

// withStats is an upstream allocator with upstream's statistics.
type withStats struct {
	*checked
	stats internal.AllocatorExtended
}

func (w withStats) GetStats() internal.Stats { return w.stats.GetStats() }

// reference is drakit's allocator. It has no allocateOne statistic (its
// search has no such function). The table asks for one only in a few
// cases, after it has checked everything else (results, errors, inputs left
// unmodified); GetStats ends such a case as skipped, saying so, instead of
// letting upstream skip it before Allocate runs.
type reference struct {
	*checked
}

func (r reference) GetStats() internal.Stats {
	r.t.Helper()
	if r.t.Failed() {
		r.t.FailNow()
	}
	r.run.statsSkipped++
	r.t.Skip("every check of this case passed; not checked: upstream's allocateOne count, which drakit's allocator does not have")
	return internal.Stats{}
}

func upstream(run *tableRun, newVariant newFunc) newFunc {
	return func(ctx context.Context, features internal.Features, state internal.AllocatedState,
		classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error) {
		c, err := newChecked(ctx, run, features, state, classes, slices)
		if err != nil {
			return nil, err
		}
		a, err := newVariant(ctx, features, state, classes, slices, celCache)
		if err != nil {
			return nil, err
		}
		c.inner, c.channel = a, a.Channel()
		if stats, ok := a.(internal.AllocatorExtended); ok {
			return withStats{checked: c, stats: stats}, nil
		}
		return c, nil
	}
}

func drakit(run *tableRun, completeOnly bool) newFunc {
	return func(ctx context.Context, features internal.Features, state internal.AllocatedState,
		classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error) {
		c, err := newChecked(ctx, run, features, state, classes, slices)
		if err != nil {
			return nil, err
		}
		a, err := allocator.NewWithOptions(ctx, allocator.Options{Mode: allocator.ModeFirstFit}, features, state, classes, slices, celCache)
		if err != nil {
			return nil, err
		}
		if completeOnly {
			allocator.SetCompleteOnly(a)
		}
		c.inner, c.channel = a, "drakit"
		return reference{c}, nil
	}
}

// runTable runs upstream's table, and its lexicographical part if asked,
// against one allocator.
func runTable(t *testing.T, features internal.Features, lexicographical bool, wrap func(*tableRun) newFunc) {
	run := &tableRun{name: t.Name()}
	summaryMu.Lock()
	summary = append(summary, run)
	summaryMu.Unlock()
	allocatortesting.TestAllocator(t, features, wrap(run))
	if lexicographical {
		allocatortesting.TestLexicographicalAllocator(t, features, wrap(run))
	}
	if run.checked < minCheckedResults {
		t.Errorf("the checker judged only %d results of the table, want at least %d", run.checked, minCheckedResults)
	}
}

// TestUpstream runs the table against upstream's allocator variants, as
// their own allocator_test.go files do (stable without the
// lexicographical part), every result through the checker: the checker
// must accept what upstream allocates.
func TestUpstream(t *testing.T) {
	variants := []struct {
		name            string
		features        internal.Features
		lexicographical bool
		new             newFunc
	}{
		{"stable", stable.SupportedFeatures, false, func(ctx context.Context, features internal.Features, state internal.AllocatedState,
			classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error) {
			return stable.NewAllocator(ctx, features, state.AllocatedDevices, classes, slices, celCache)
		}},
		{"incubating", incubating.SupportedFeatures, true, func(ctx context.Context, features internal.Features, state internal.AllocatedState,
			classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error) {
			return incubating.NewAllocator(ctx, features, state, classes, slices, celCache)
		}},
		{"experimental", experimental.SupportedFeatures, true, func(ctx context.Context, features internal.Features, state internal.AllocatedState,
			classes internal.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (internal.Allocator, error) {
			return experimental.NewAllocator(ctx, features, state, classes, slices, celCache)
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			runTable(t, v.features, v.lexicographical, func(run *tableRun) newFunc { return upstream(run, v.new) })
		})
	}
}

// TestReference runs the table against drakit's reference allocator in
// first-fit mode, once as is and once with the lazy phase switched off, so
// that every case goes through the complete search (candidate lists,
// bounds, symmetry breaking) and must still give upstream's result.
func TestReference(t *testing.T) {
	for _, completeOnly := range []bool{false, true} {
		name := "first-fit"
		if completeOnly {
			name = "first-fit-complete-search"
		}
		t.Run(name, func(t *testing.T) {
			runTable(t, internal.FeaturesAll, true, func(run *tableRun) newFunc { return drakit(run, completeOnly) })
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if path := os.Getenv(summaryEnv); path != "" {
		var b strings.Builder
		for _, run := range summary {
			fmt.Fprintf(&b, "%s: the checker judged %d results", run.name, run.checked)
			if run.statsSkipped > 0 {
				fmt.Fprintf(&b, "; %d cases passed every check but upstream's allocateOne count and are reported as skipped", run.statsSkipped)
			}
			b.WriteString("\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "write summary: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
