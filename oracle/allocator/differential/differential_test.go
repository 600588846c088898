package differential

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/check"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

var (
	flagSeed      = flag.Uint64("seed", 1, "first seed of the differential run; instance i uses seed+i")
	flagInstances = flag.Int("instances", 2000, "number of random instances")
	flagUpstream  = flag.Duration("upstream-timeout", 200*time.Millisecond, "time budget of one upstream Allocate call")
	flagReference = flag.Duration("reference-timeout", 2*time.Second, "time limit of one reference Allocate call")
	flagMaxFail   = flag.Int("max-failures", 3, "stop after this many shrunk failures")
)

// outcome is what one allocator did with one scenario.
type outcome struct {
	results []resourceapi.AllocationResult
	err     error
	timeout bool
	elapsed time.Duration
}

// kind is the satisfiability verdict. An error wrapping
// structured.ErrFailedAllocationOnNode is, by upstream's contract, a
// failure on this node only, the same verdict as nil results.
func (o outcome) kind() string {
	switch {
	case o.timeout:
		return "timeout"
	case o.err != nil && errors.Is(o.err, structured.ErrFailedAllocationOnNode):
		return "no fit"
	case o.err != nil:
		return "error"
	case o.results == nil:
		return "no fit"
	}
	return "fit"
}

type allocateFunc func(ctx context.Context, f structured.Features, state structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, celCache *cel.Cache, s *scenario.Scenario) ([]resourceapi.AllocationResult, error)

func upstream(ctx context.Context, f structured.Features, state structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, celCache *cel.Cache, s *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
	a, err := structured.NewAllocator(ctx, f, state, classes, slices, celCache)
	if err != nil {
		return nil, err
	}
	return a.Allocate(ctx, s.Node, s.Claims)
}

func reference(ctx context.Context, f structured.Features, state structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, celCache *cel.Cache, s *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
	a, err := allocator.New(ctx, f, state, classes, slices, celCache)
	if err != nil {
		return nil, err
	}
	return a.Allocate(ctx, s.Node, s.Claims)
}

// The allocators verdict compares; tests of the harness replace them.
var (
	upstreamUnderTest  allocateFunc = upstream
	referenceUnderTest allocateFunc = reference
)

func run(s *scenario.Scenario, allocate allocateFunc, limit time.Duration) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// Each allocator gets its own copies: neither may see the other's
	// side effects, and the checker must see the original input.
	c := copyScenario(s)
	start := time.Now()
	results, err := allocate(ctx, c.Features.Structured(), c.AllocatedState(), c.ClassLister(), c.ResourceSlices, cel.NewCache(10, c.Features.CEL()), c)
	o := outcome{results: results, err: err, elapsed: time.Since(start)}
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		o.timeout = true
	}
	return o
}

// verdict compares both allocators on one scenario. It returns "" when all
// is well, otherwise the problem; upstreamTimedOut says the satisfiability
// comparison was skipped; kind is the reference's verdict.
func verdict(s *scenario.Scenario) (problem string, upstreamTimedOut bool, kind string) {
	up := run(s, upstreamUnderTest, *flagUpstream)
	ref := run(s, referenceUnderTest, *flagReference)
	var problems []string
	for _, o := range []struct {
		name string
		out  outcome
	}{{"upstream", up}, {"reference", ref}} {
		if o.out.results == nil {
			continue
		}
		if err := check.Check(context.Background(), checkInput(s), o.out.results); err != nil {
			problems = append(problems, fmt.Sprintf("%s result fails the checker:\n%v", o.name, err))
		}
	}
	if ref.timeout {
		problems = append(problems, fmt.Sprintf("reference timed out after %v", ref.elapsed))
	}
	switch {
	case up.timeout:
		upstreamTimedOut = true
	case allConstraintError(up, ref) || allConstraintError(ref, up):
		// Both refuse. Which one reports the All-mode constraint error
		// instead of "no fit" depends on the order it searches in.
		kindRefused++
	case upstreamAllErrorRefFit(up, ref):
		// Upstream's All-mode constraint check is order dependent: on the
		// same input it sometimes fits and sometimes fails (seed 204603:
		// 2 fits in 6 runs). The reference's allocation passed the
		// independent checker above, so it is a valid answer.
		kindUpstreamFlaky++
	case up.kind() != ref.kind():
		problems = append(problems, fmt.Sprintf("satisfiability differs: upstream %s (%v), reference %s (%v)", up.kind(), up.err, ref.kind(), ref.err))
	}
	return strings.Join(problems, "\n"), upstreamTimedOut, ref.kind()
}

// kindUpstreamFlaky counts instances where upstream failed with its All-mode
// constraint error and the reference found an allocation the checker accepts.
var kindUpstreamFlaky int

func upstreamAllErrorRefFit(up, ref outcome) bool {
	return up.kind() == "error" && strings.Contains(up.err.Error(), "because a claim constraint would not be satisfied") &&
		ref.kind() == "fit"
}

// kindRefused counts instances where one allocator said "no fit" and the
// other failed with the All-mode constraint error.
var kindRefused int

// allConstraintError: a failed with upstream's All-mode "claim constraint
// would not be satisfied" error, b found no fit.
func allConstraintError(a, b outcome) bool {
	return a.kind() == "error" && strings.Contains(a.err.Error(), "because a claim constraint would not be satisfied") && b.kind() == "no fit"
}

func checkInput(s *scenario.Scenario) check.Input {
	return check.Input{
		Features:       s.Features.Structured(),
		AllocatedState: s.AllocatedState(),
		Classes:        s.DeviceClasses,
		Slices:         s.ResourceSlices,
		Node:           s.Node,
		Claims:         s.Claims,
	}
}

// failureClass reduces a problem to what shrinking must preserve.
func failureClass(problem string) string {
	switch {
	case strings.Contains(problem, "upstream result fails"):
		return "upstream-invalid"
	case strings.Contains(problem, "reference result fails"):
		return "reference-invalid"
	case strings.Contains(problem, "reference timed out"):
		return "reference-timeout"
	}
	return "satisfiability"
}

func TestDifferential(t *testing.T) {
	var instances, agree, upstreamTimeouts, failures int
	kinds, timeoutKinds := map[string]int{}, map[string]int{}
	start := time.Now()
	for i := range *flagInstances {
		seed := *flagSeed + uint64(i)
		s := generate(seed)
		instances++
		problem, timedOut, kind := verdict(s)
		kinds[kind]++
		if timedOut {
			upstreamTimeouts++
			timeoutKinds[kind]++
		}
		if problem == "" {
			if !timedOut {
				agree++
			}
			continue
		}
		failures++
		small := shrink(s, failureClass(problem))
		smallProblem, _, _ := verdict(small)
		yaml, err := scenario.Marshal(small)
		if err != nil {
			t.Fatalf("marshal scenario of seed %d: %v", seed, err)
		}
		t.Errorf("seed %d: %s\nshrunk reproducer (%s):\n%s", seed, problem, smallProblem, yaml)
		if failures >= *flagMaxFail {
			break
		}
	}
	t.Logf("instances=%d agreements=%d (of which error vs no fit on an All constraint: %d; upstream All-constraint error vs checked reference fit: %d) upstream-timeouts=%d (reference verdicts there: %v) failures=%d reference-verdicts=%v in %v (seeds %d..%d)",
		instances, agree, kindRefused, kindUpstreamFlaky, upstreamTimeouts, timeoutKinds, failures, kinds, time.Since(start).Round(time.Millisecond), *flagSeed, *flagSeed+uint64(instances)-1)
	if instances > 0 && kinds["fit"] == 0 {
		t.Errorf("no instance had an allocation: the generator exercises nothing")
	}
}
