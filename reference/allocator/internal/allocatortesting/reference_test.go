package allocatortesting_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/reference/allocator"
	"drakit.dev/drakit/reference/allocator/internal/allocatortesting"
)

func newReference(ctx context.Context, features structured.Features, state structured.AllocatedState,
	classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache,
) (allocatortesting.Allocator, error) {
	return allocator.New(ctx, features, state, classes, slices, celCache)
}

// minCheckedResults is well below the number of table cases whose Allocate
// returns a result (the table's own gomega assertions judge every case); it
// guards against the table silently running nothing against the checker.
const minCheckedResults = 100

// TestReferenceTable runs upstream's table against drakit's reference
// allocator (default, first-fit mode), every result through the checker.
func TestReferenceTable(t *testing.T) {
	checked := 0
	check := func(t *testing.T, in allocatortesting.CaseInput, results []resourceapi.AllocationResult) {
		checked++
		checkResults(t, in, results)
	}
	allocatortesting.TestAllocator(t, allocatortesting.FeaturesAll, newReference, check)
	allocatortesting.TestLexicographicalAllocator(t, allocatortesting.FeaturesAll, newReference, check)
	t.Logf("the checker judged %d results", checked)
	if checked < minCheckedResults {
		t.Errorf("the checker judged only %d results of the table, want at least %d", checked, minCheckedResults)
	}
}
