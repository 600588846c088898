package allocatortesting

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// AllocatorChannel names upstream's allocator variant ("stable",
// "incubating", "experimental"); it replaces internal.AllocatorChannel.
type AllocatorChannel string

// Upstream's variant names, as returned by the variants' Channel method.
const (
	Experimental AllocatorChannel = "experimental"
	Stable       AllocatorChannel = "stable"
	Incubating   AllocatorChannel = "incubating"
)

// FeaturesAll enables every allocator feature known at v0.37.2, like
// upstream's internal.FeaturesAll.
var FeaturesAll = Features{
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

// CaseInput is everything one table case handed to the allocator, in the
// shape a result checker needs.
type CaseInput struct {
	Features       Features
	AllocatedState AllocatedState
	Classes        []*resourceapi.DeviceClass
	Slices         []*resourceapi.ResourceSlice
	Node           *v1.Node
	Claims         []*resourceapi.ResourceClaim
}

// ResultHook is called for every table case whose Allocate call returned a
// non-nil result and no error, with the results exactly as the allocator
// returned them (share IDs not yet normalised). It reports problems through
// t and must not modify its arguments.
type ResultHook func(t *testing.T, in CaseInput, results []resourceapi.AllocationResult)

// allocatorStats returns the NumAllocateOneInvocations statistic of an
// allocator that has upstream's GetStats method (whose result type is
// internal to upstream, hence reflection), and false for any other allocator.
func allocatorStats(allocator Allocator) (int64, bool) {
	m := reflect.ValueOf(allocator).MethodByName("GetStats")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.Struct {
		return 0, false
	}
	f := m.Call(nil)[0].FieldByName("NumAllocateOneInvocations")
	if !f.IsValid() || f.Kind() != reflect.Int64 {
		return 0, false
	}
	return f.Int(), true
}

// allocatorChannel returns the variant name of an allocator with upstream's
// Channel method, and "" for any other allocator.
func allocatorChannel(allocator Allocator) AllocatorChannel {
	m := reflect.ValueOf(allocator).MethodByName("Channel")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.String {
		return ""
	}
	return AllocatorChannel(m.Call(nil)[0].String())
}
