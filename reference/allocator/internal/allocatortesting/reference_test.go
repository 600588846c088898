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

// TestReferenceTable runs upstream's table against drakit's reference
// allocator (default, first-fit mode), every result through the checker.
func TestReferenceTable(t *testing.T) {
	allocatortesting.TestAllocator(t, allocatortesting.FeaturesAll, newReference, checkResults)
	allocatortesting.TestLexicographicalAllocator(t, allocatortesting.FeaturesAll, newReference, checkResults)
}
