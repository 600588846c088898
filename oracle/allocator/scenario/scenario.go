package scenario

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// APIVersion and Kind identify a scenario file.
const (
	APIVersion = "allocator.drakit.dev/v1alpha1"
	Kind       = "Scenario"
)

// Features mirrors structured.Features with YAML names; zero values mean off.
type Features struct {
	AdminAccess             bool `json:"adminAccess,omitempty"`
	CompatibilityGroups     bool `json:"compatibilityGroups,omitempty"`
	ConsumableCapacity      bool `json:"consumableCapacity,omitempty"`
	DerivedAttributes       bool `json:"derivedAttributes,omitempty"`
	DeviceBindingAndStatus  bool `json:"deviceBindingAndStatus,omitempty"`
	DeviceTaints            bool `json:"deviceTaints,omitempty"`
	FractionalCapacityRange bool `json:"fractionalCapacityRange,omitempty"`
	ListTypeAttributes      bool `json:"listTypeAttributes,omitempty"`
	OptionalNodeOperations  bool `json:"optionalNodeOperations,omitempty"`
	PartitionableDevices    bool `json:"partitionableDevices,omitempty"`
	PrioritizedList         bool `json:"prioritizedList,omitempty"`
}

// Scenario is one allocation problem: allocate Claims, in order, on Node.
type Scenario struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name says what the scenario is about (e.g. "H3 n=32 k=8").
	Name string `json:"name,omitempty"`
	// Satisfiable, when set, is the known answer: whether an allocation exists.
	Satisfiable *bool `json:"satisfiable,omitempty"`

	Features        Features                     `json:"features,omitempty"`
	Node            *v1.Node                     `json:"node"`
	DeviceClasses   []*resourceapi.DeviceClass   `json:"deviceClasses,omitempty"`
	ResourceSlices  []*resourceapi.ResourceSlice `json:"resourceSlices,omitempty"`
	AllocatedClaims []*resourceapi.ResourceClaim `json:"allocatedClaims,omitempty"`
	Claims          []*resourceapi.ResourceClaim `json:"claims"`
}
