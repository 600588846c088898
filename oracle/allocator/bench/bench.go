package bench

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// celCacheSize is the scheduler's DRA CEL cache size.
const celCacheSize = 10

// Outcome is one allocator's answer for one scenario.
type Outcome struct {
	// Results has one entry per claim; nil when the claims do not fit.
	Results []resourceapi.AllocationResult
	// Explanation says why the claims do not fit (reference only).
	Explanation string
	// Duration is the wall time of creating the allocator and Allocate.
	Duration time.Duration
}

// Upstream allocates s.Claims on s.Node with structured.NewAllocator, which
// picks the stable, incubating or experimental variant from s.Features.
func Upstream(ctx context.Context, s *scenario.Scenario) (Outcome, error) {
	start := time.Now()
	a, err := structured.NewAllocator(ctx, s.Features.Structured(), s.AllocatedState(), s.ClassLister(), s.ResourceSlices,
		cel.NewCache(celCacheSize, s.Features.CEL()))
	if err != nil {
		return Outcome{}, fmt.Errorf("create upstream allocator for %q: %w", s.Name, err)
	}
	res, err := a.Allocate(ctx, s.Node, s.Claims)
	d := time.Since(start)
	if err != nil {
		return Outcome{Duration: d}, fmt.Errorf("upstream allocate %q: %w", s.Name, err)
	}
	return Outcome{Results: res, Duration: d}, nil
}

// Reference allocates s.Claims on s.Node with the reference allocator.
func Reference(ctx context.Context, opts allocator.Options, s *scenario.Scenario) (Outcome, error) {
	start := time.Now()
	a, err := allocator.NewWithOptions(ctx, opts, s.Features.Structured(), s.AllocatedState(), s.ClassLister(), s.ResourceSlices,
		cel.NewCache(celCacheSize, s.Features.CEL()))
	if err != nil {
		return Outcome{}, fmt.Errorf("create reference allocator for %q: %w", s.Name, err)
	}
	res, why, err := a.AllocateExplained(ctx, s.Node, s.Claims)
	d := time.Since(start)
	if err != nil {
		return Outcome{Duration: d}, fmt.Errorf("reference allocate %q: %w", s.Name, err)
	}
	return Outcome{Results: res, Explanation: why, Duration: d}, nil
}

// UpstreamFunc adapts Upstream to scenario.AllocateFunc.
func UpstreamFunc() scenario.AllocateFunc {
	return func(ctx context.Context, s *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
		o, err := Upstream(ctx, s)
		return o.Results, err
	}
}

// ReferenceFunc adapts Reference to scenario.AllocateFunc.
func ReferenceFunc(opts allocator.Options) scenario.AllocateFunc {
	return func(ctx context.Context, s *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
		o, err := Reference(ctx, opts, s)
		return o.Results, err
	}
}
