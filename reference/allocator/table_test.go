package allocator

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/reference/allocator/internal/allocatortesting"
)

// supportedFeatures is every allocator feature of v0.37.2.
var supportedFeatures = structured.Features{
	AdminAccess:             true,
	CompatibilityGroups:     true,
	ConsumableCapacity:      true,
	DerivedAttributes:       true,
	DeviceBindingAndStatus:  true,
	DeviceTaints:            true,
	FractionalCapacityRange: true,
	ListTypeAttributes:      true,
	OptionalNodeOperations:  true,
	PartitionableDevices:    true,
	PrioritizedList:         true,
}

func newForTable(mode Mode, completeOnly bool) func(ctx context.Context, features structured.Features, state structured.AllocatedState,
	classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (structured.Allocator, error) {
	return func(ctx context.Context, features structured.Features, state structured.AllocatedState,
		classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (structured.Allocator, error) {
		a, err := NewWithOptions(ctx, Options{Mode: mode}, features, state, classes, slices, celCache)
		if err != nil {
			return nil, err
		}
		a.completeOnly = completeOnly
		return a, nil
	}
}

// TestUpstreamTable runs upstream's allocator test table (the semantic
// ground truth) against the reference allocator in first-fit mode.
func TestUpstreamTable(t *testing.T) {
	allocatortesting.TestAllocator(t, supportedFeatures, newForTable(ModeFirstFit, false))
	allocatortesting.TestLexicographicalAllocator(t, supportedFeatures, newForTable(ModeFirstFit, false))
}

// TestUpstreamTableComplete runs the table with the lazy phase switched
// off, so that every case goes through the complete search (candidate
// lists, bounds, symmetry breaking) and must still give upstream's result.
func TestUpstreamTableComplete(t *testing.T) {
	allocatortesting.TestAllocator(t, supportedFeatures, newForTable(ModeFirstFit, true))
	allocatortesting.TestLexicographicalAllocator(t, supportedFeatures, newForTable(ModeFirstFit, true))
}
