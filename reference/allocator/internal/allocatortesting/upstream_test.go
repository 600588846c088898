package allocatortesting_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"drakit.dev/drakit/reference/allocator/check"
	"drakit.dev/drakit/reference/allocator/internal/allocatortesting"
)

// checkResults runs every table result through the independent checker.
func checkResults(t *testing.T, in allocatortesting.CaseInput, results []resourceapi.AllocationResult) {
	t.Helper()
	err := check.Check(context.Background(), check.Input{
		Features:       in.Features,
		AllocatedState: in.AllocatedState,
		Classes:        in.Classes,
		Slices:         in.Slices,
		Node:           in.Node,
		Claims:         in.Claims,
	}, results)
	if err != nil {
		t.Errorf("checker rejects the result:\n%v", err)
	}
}

// newUpstream is upstream's public constructor; NewAllocator picks the most
// stable variant that supports each case's features.
func newUpstream(ctx context.Context, features structured.Features, state structured.AllocatedState,
	classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache,
) (allocatortesting.Allocator, error) {
	return structured.NewAllocator(ctx, features, state, classes, slices, celCache)
}

// upstreamVariants are upstream's allocator variants with the features each
// supports (structured/internal/{stable,incubating,experimental}.SupportedFeatures
// at v0.37.2), and whether upstream runs the lexicographical table on it.
var upstreamVariants = []struct {
	name            string
	features        structured.Features
	lexicographical bool
}{
	{name: "stable", features: structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true}},
	{name: "incubating", lexicographical: true, features: structured.Features{
		AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true,
		DeviceBindingAndStatus: true, ConsumableCapacity: true, FractionalCapacityRange: true,
	}},
	{name: "experimental", lexicographical: true, features: allocatortesting.FeaturesAll},
}

// TestUpstreamTable proves the copied table is faithful: every upstream
// variant passes it, as in upstream's own per-variant tests.
func TestUpstreamTable(t *testing.T) {
	t.Cleanup(func() { structured.EnableAllocators() })
	for _, v := range upstreamVariants {
		t.Run(v.name, func(t *testing.T) {
			structured.EnableAllocators(v.name)
			allocatortesting.TestAllocator(t, v.features, newUpstream, checkResults)
			if v.lexicographical {
				allocatortesting.TestLexicographicalAllocator(t, v.features, newUpstream, checkResults)
			}
		})
	}
}
