package differential

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/oracle/allocator/scenario"
)

// brokenReference answers like upstream but hands every claim's first
// device to the first claim as well: a double allocation.
func brokenReference(ctx context.Context, f structured.Features, state structured.AllocatedState, classes structured.DeviceClassLister,
	slices []*resourceapi.ResourceSlice, celCache *cel.Cache, s *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
	results, err := upstream(ctx, f, state, classes, slices, celCache, s)
	if err != nil || len(results) < 2 {
		return results, err
	}
	for i := 1; i < len(results); i++ {
		if len(results[i].Devices.Results) > 0 && len(results[0].Devices.Results) > 0 {
			d := results[i].Devices.Results[0]
			results[0].Devices.Results[0].Driver, results[0].Devices.Results[0].Pool, results[0].Devices.Results[0].Device = d.Driver, d.Pool, d.Device
		}
	}
	return results, nil
}

// neverFits claims nothing ever fits.
func neverFits(context.Context, structured.Features, structured.AllocatedState, structured.DeviceClassLister,
	[]*resourceapi.ResourceSlice, *cel.Cache, *scenario.Scenario) ([]resourceapi.AllocationResult, error) {
	return nil, nil
}

// TestHarnessCatchesDefects: the harness reports an invalid result and a
// satisfiability disagreement, and shrinking keeps the failure while making
// the scenario smaller.
func TestHarnessCatchesDefects(t *testing.T) {
	for name, tc := range map[string]struct {
		ref   allocateFunc
		class string
	}{
		"invalid result":          {ref: brokenReference, class: "reference-invalid"},
		"satisfiability mismatch": {ref: neverFits, class: "satisfiability"},
	} {
		t.Run(name, func(t *testing.T) {
			referenceUnderTest = tc.ref
			t.Cleanup(func() { referenceUnderTest = reference })
			for seed := range uint64(400) {
				s := generate(seed)
				problem, _, _ := verdict(s)
				if problem == "" || failureClass(problem) != tc.class {
					continue
				}
				small := shrink(s, tc.class)
				smallProblem, _, _ := verdict(small)
				if failureClass(smallProblem) != tc.class || smallProblem == "" {
					t.Fatalf("seed %d: shrinking lost the failure: %q", seed, smallProblem)
				}
				if size(small) >= size(s) {
					t.Errorf("seed %d: shrinking removed nothing (%d >= %d)", seed, size(small), size(s))
				}
				if tc.class == "reference-invalid" && !strings.Contains(smallProblem, "device-in-use") {
					t.Errorf("seed %d: expected a device-in-use violation, got %s", seed, smallProblem)
				}
				return
			}
			t.Fatalf("no seed below 400 showed the %s defect", tc.class)
		})
	}
}
