package fabric_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/bench"
	"drakit.dev/drakit/oracle/allocator/check"
	"drakit.dev/drakit/oracle/allocator/scenario"
	"drakit.dev/drakit/reference/simulate/fabric"
)

// celCacheSize is the scheduler's DRA CEL cache size (as in oracle/allocator/bench).
const celCacheSize = 10

var upstreamTimeout = flag.Duration("upstream-timeout", 3*time.Second,
	"per-Allocate time limit of the upstream allocator; an operation that hits it is reported as timeouts/op and ends that benchmark")

func fabricCases(tb testing.TB) []fabric.Case {
	tb.Helper()
	cases, err := fabric.Cases(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return cases
}

func checkInput(s *scenario.Scenario, node *v1.Node) check.Input {
	return check.Input{Features: s.Features.Structured(), AllocatedState: s.AllocatedState(), Classes: s.DeviceClasses,
		Slices: s.ResourceSlices, Node: node, Claims: s.Claims}
}

// newAllocator is NewAllocator of upstream's structured allocator or the
// reference allocator, both with the scenario's inputs.
type newAllocator func(ctx context.Context, s *scenario.Scenario, celCache *cel.Cache) (structured.Allocator, error)

func upstreamAllocator(ctx context.Context, s *scenario.Scenario, celCache *cel.Cache) (structured.Allocator, error) {
	return structured.NewAllocator(ctx, s.Features.Structured(), s.AllocatedState(), s.ClassLister(), s.ResourceSlices, celCache)
}

func referenceAllocator(ctx context.Context, s *scenario.Scenario, celCache *cel.Cache) (structured.Allocator, error) {
	return allocator.New(ctx, s.Features.Structured(), s.AllocatedState(), s.ClassLister(), s.ResourceSlices, celCache)
}

// filterPass allocates s's claims on every node with one allocator, as the
// scheduler's Filter does for one pod, and returns the nodes they fit on
// with their results. perNode, when positive, limits each Allocate, as the
// scheduler's filter timeout does; an Allocate past it ends the pass with
// an error wrapping context.DeadlineExceeded.
func filterPass(ctx context.Context, s *scenario.Scenario, nodes []*v1.Node, celCache *cel.Cache, newAlloc newAllocator, perNode time.Duration) (map[string][]resourceapi.AllocationResult, error) {
	a, err := newAlloc(ctx, s, celCache)
	if err != nil {
		return nil, err
	}
	fits := map[string][]resourceapi.AllocationResult{}
	for _, n := range nodes {
		nodeCtx, cancel := ctx, context.CancelFunc(func() {})
		if perNode > 0 {
			nodeCtx, cancel = context.WithTimeout(ctx, perNode)
		}
		res, err := a.Allocate(nodeCtx, n, s.Claims)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("allocate on node %s: %w", n.Name, err)
		}
		if res != nil {
			fits[n.Name] = res
		}
	}
	return fits, nil
}

// TestFabricCases: both allocators find an allocation for each case on its
// node and agree on which of the 1,000 nodes it fits; every reference
// result passes the independent checker.
func TestFabricCases(t *testing.T) {
	for _, fc := range fabricCases(t) {
		t.Run(fc.Name, func(t *testing.T) {
			s := fc.Scenario
			if errs := s.Validate(); len(errs) > 0 {
				t.Fatalf("scenario invalid: %v", errs.ToAggregate())
			}
			ctx := t.Context()
			ref, err := bench.Reference(ctx, allocator.Options{}, s)
			if err != nil || ref.Results == nil {
				t.Fatalf("reference on %s: %v, results %v (%s)", s.Node.Name, err, ref.Results, ref.Explanation)
			}
			if err := check.Check(ctx, checkInput(s, s.Node), ref.Results); err != nil {
				t.Errorf("reference result on %s is invalid: %v", s.Node.Name, err)
			}
			upCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			up, err := bench.Upstream(upCtx, s)
			if err != nil || up.Results == nil {
				t.Fatalf("upstream on %s: %v, results %v", s.Node.Name, err, up.Results)
			}
			celCache := cel.NewCache(celCacheSize, s.Features.CEL())
			refFits, err := filterPass(ctx, s, fc.Nodes, celCache, referenceAllocator, 0)
			if err != nil {
				t.Fatal(err)
			}
			upFits, err := filterPass(upCtx, s, fc.Nodes, celCache, upstreamAllocator, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(refFits) != fc.Feasible || len(upFits) != fc.Feasible {
				t.Errorf("fits on %d nodes (reference), %d (upstream); want %d", len(refFits), len(upFits), fc.Feasible)
			}
			for name := range upFits {
				if refFits[name] == nil {
					t.Errorf("upstream fits it on %s, the reference does not", name)
				}
			}
			checked := 0
			for _, n := range fc.Nodes {
				res := refFits[n.Name]
				if res == nil || checked >= 20 { // the checker is slow on 1,000 nodes' slices; 20 suffice
					continue
				}
				checked++
				if err := check.Check(ctx, checkInput(s, n), res); err != nil {
					t.Errorf("reference result on %s is invalid: %v", n.Name, err)
				}
			}
		})
	}
}

// BenchmarkFabric times each fabric case on the scale-1000 inventory with
// upstream's allocator and the reference allocator, side by side: "node"
// is NewAllocator + Allocate on the case's node, "filter" NewAllocator and
// Allocate on each of the 1,000 nodes (the scheduler's Filter for one pod,
// run sequentially). Run with -cpu 1. Upstream gets -upstream-timeout per
// Allocate (per node in the Filter pass, as the scheduler's filter timeout
// applies per node); timeouts/op reports an operation that hit it.
func BenchmarkFabric(b *testing.B) {
	for _, fc := range fabricCases(b) {
		s := fc.Scenario
		celCache := cel.NewCache(celCacheSize, s.Features.CEL())
		for _, impl := range []struct {
			name    string
			alloc   newAllocator
			timeout time.Duration
		}{{"upstream", upstreamAllocator, *upstreamTimeout}, {"reference", referenceAllocator, 0}} {
			b.Run(fc.Name+"/node/"+impl.name, func(b *testing.B) {
				run(b, s, impl.timeout, func(ctx context.Context) ([]resourceapi.AllocationResult, error) {
					a, err := impl.alloc(ctx, s, celCache)
					if err != nil {
						return nil, err
					}
					return a.Allocate(ctx, s.Node, s.Claims)
				})
			})
			b.Run(fc.Name+"/filter/"+impl.name, func(b *testing.B) {
				run(b, s, 0, func(ctx context.Context) ([]resourceapi.AllocationResult, error) {
					fits, err := filterPass(ctx, s, fc.Nodes, celCache, impl.alloc, impl.timeout)
					if err != nil {
						return nil, err
					}
					if len(fits) != fc.Feasible {
						return nil, errors.New("wrong number of feasible nodes")
					}
					return fits[s.Node.Name], nil
				})
			})
		}
	}
}

// run times allocate b.N times (each with timeout, when positive) and
// reports found/op and, where a limit applies, timeouts/op, as
// oracle/allocator/bench's BenchmarkAllocator does, so that
// scripts/bench-allocator.sh reads both alike.
func run(b *testing.B, s *scenario.Scenario, timeout time.Duration, allocate func(ctx context.Context) ([]resourceapi.AllocationResult, error)) {
	b.ReportAllocs()
	found, timeouts, ops := 0, 0, 0
	for range b.N {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, timeout)
		}
		res, err := allocate(ctx)
		cancel()
		ops++
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
		case err != nil:
			b.Fatalf("%s: %v", s.Name, err)
		case res != nil:
			found++
		}
		if timeouts > 0 {
			break
		}
	}
	b.ReportMetric(float64(found)/float64(ops), "found/op")
	if timeout > 0 || timeouts > 0 { // a Filter pass limits each Allocate itself
		b.ReportMetric(float64(timeouts)/float64(ops), "timeouts/op")
	}
}
