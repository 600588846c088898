package bench

import (
	"context"
	"errors"
	"flag"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/instances"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

var upstreamTimeout = flag.Duration("upstream-timeout", 3*time.Second,
	"per-Allocate time limit of the upstream allocator; an operation that hits it is reported as timeouts/op and ends that benchmark")

type allocateFunc func(ctx context.Context) ([]resourceapi.AllocationResult, error)

// BenchmarkAllocator runs every size of every instance family through
// upstream and the reference allocator side by side. Each operation creates
// the allocator (as the scheduler does once per pod) and allocates the
// scenario's claims on its node; the CEL cache lives across operations (as
// in the scheduler). Run with -cpu 1 (GOMAXPROCS=1). Metrics: ns/op,
// found/op (1 when an allocation was found) and timeouts/op (upstream only,
// 1 when the operation hit -upstream-timeout; the benchmark then stops).
// scripts/bench-allocator.sh turns the output into a table of ratios.
func BenchmarkAllocator(b *testing.B) {
	for _, f := range instances.Families() {
		for _, size := range f.Sizes {
			s, err := f.New(size.N, size.K)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(f.Name+"/"+size.String(), func(b *testing.B) {
				benchScenario(b, s)
			})
		}
	}
}

func benchScenario(b *testing.B, s *scenario.Scenario) {
	features := s.Features.Structured()
	state := s.AllocatedState()
	lister := s.ClassLister()
	celCache := cel.NewCache(celCacheSize, s.Features.CEL())
	b.Run("upstream", func(b *testing.B) {
		run(b, s, *upstreamTimeout, func(ctx context.Context) ([]resourceapi.AllocationResult, error) {
			a, err := structured.NewAllocator(ctx, features, state, lister, s.ResourceSlices, celCache)
			if err != nil {
				return nil, err
			}
			return a.Allocate(ctx, s.Node, s.Claims)
		})
	})
	b.Run("reference", func(b *testing.B) {
		run(b, s, 0, func(ctx context.Context) ([]resourceapi.AllocationResult, error) {
			a, err := allocator.New(ctx, features, state, lister, s.ResourceSlices, celCache)
			if err != nil {
				return nil, err
			}
			return a.Allocate(ctx, s.Node, s.Claims)
		})
	})
}

func run(b *testing.B, s *scenario.Scenario, timeout time.Duration, allocate allocateFunc) {
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
	if timeouts == 0 && s.Satisfiable != nil && (found > 0) != *s.Satisfiable {
		b.Errorf("%s: found an allocation: %v, want %v", s.Name, found > 0, *s.Satisfiable)
	}
}
