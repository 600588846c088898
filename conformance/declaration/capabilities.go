package declaration

import (
	"fmt"
	"slices"
)

// CapabilityName names an optional capability in Declaration.Capabilities.
type CapabilityName string

// The optional capabilities of Kubernetes 1.37 DRA that a driver can claim,
// named after the API fields or feature gates they are about.
const (
	CapabilityDeviceHealth              CapabilityName = "deviceHealth"
	CapabilityDeviceHealthMessages      CapabilityName = "deviceHealthMessages"
	CapabilityPartitionableDevices      CapabilityName = "partitionableDevices"
	CapabilityPerDeviceNodeSelection    CapabilityName = "perDeviceNodeSelection"
	CapabilityDeviceStatus              CapabilityName = "deviceStatus"
	CapabilityBindingConditions         CapabilityName = "bindingConditions"
	CapabilityAdminAccess               CapabilityName = "adminAccess"
	CapabilityDeviceTaints              CapabilityName = "deviceTaints"
	CapabilityConsumableCapacity        CapabilityName = "consumableCapacity"
	CapabilityFractionalCapacityRange   CapabilityName = "fractionalCapacityRange"
	CapabilityDeviceMetadata            CapabilityName = "deviceMetadata"
	CapabilityListTypeAttributes        CapabilityName = "listTypeAttributes"
	CapabilityNodeAllocatableResources  CapabilityName = "nodeAllocatableResources"
	CapabilityPartitionableDevicesType  CapabilityName = "partitionableDevicesType"
	CapabilityOptionalNodeOperations    CapabilityName = "optionalNodeOperations"
	CapabilityDeviceCompatibilityGroups CapabilityName = "deviceCompatibilityGroups"
	CapabilityNUMANodeAttribute         CapabilityName = "numaNodeAttribute"
)

// Stage is a capability's maturity in Kubernetes 1.37.2 (the code's, where
// a KEP's metadata says otherwise).
type Stage string

// The stages. Alpha gates are off by default, beta and GA gates on.
const (
	StageAlpha Stage = "alpha"
	StageBeta  Stage = "beta"
	StageGA    Stage = "GA"
)

// Capability is one optional capability a driver may claim.
type Capability struct {
	Name CapabilityName
	// KEP is the Kubernetes enhancement that defines it.
	KEP int
	// FeatureGate is the Kubernetes feature gate that enables it in the
	// cluster; empty when there is none (the driver opts in by itself).
	FeatureGate string
	// Stage is its maturity in Kubernetes 1.37.2.
	Stage Stage
	// Requires are the capabilities a driver must also claim to claim it.
	Requires []CapabilityName
	// Meaning says in one line what claiming it promises.
	Meaning string
}

// String is the name with the KEP, as the kit reports capabilities:
// "partitionableDevices (KEP-4815)".
func (c Capability) String() string {
	return fmt.Sprintf("%s (KEP-%d)", c.Name, c.KEP)
}

// capabilities are the optional capabilities, ordered by KEP number. The
// package documentation names the DRA features of 1.37 that are not a
// driver's to claim.
var capabilities = []Capability{
	{
		Name: CapabilityDeviceHealth, KEP: 4680, FeatureGate: "ResourceHealthStatus", Stage: StageBeta,
		Meaning: "the driver serves the DRAResourceHealth service and pods show its reports in allocatedResourcesStatus",
	},
	{
		Name: CapabilityDeviceHealthMessages, KEP: 4680, FeatureGate: "ResourceHealthStatusMessage", Stage: StageBeta,
		Requires: []CapabilityName{CapabilityDeviceHealth},
		Meaning:  "the driver's health reports carry a message that pods show in allocatedResourcesStatus",
	},
	{
		Name: CapabilityPartitionableDevices, KEP: 4815, FeatureGate: "DRAPartitionableDevices", Stage: StageBeta,
		Meaning: "devices consume shared counters (sharedCounters, consumesCounters), e.g. a GPU and its MIG partitions",
	},
	{
		Name: CapabilityPerDeviceNodeSelection, KEP: 4815, FeatureGate: "DRAPartitionableDevices", Stage: StageBeta,
		Meaning: "slices set perDeviceNodeSelection and each device names its own nodes",
	},
	{
		Name: CapabilityPartitionableDevicesType, KEP: 4815, FeatureGate: "DRAPartitionableDevicesType", Stage: StageAlpha,
		Requires: []CapabilityName{CapabilityPartitionableDevices},
		Meaning:  "slices with counter-consuming devices set partitionTypeAttribute, a string attribute of each of them",
	},
	{
		Name: CapabilityDeviceStatus, KEP: 4817, FeatureGate: "DRAResourceClaimDeviceStatus", Stage: StageGA,
		Meaning: "the driver reports conditions, data or networkData of allocated devices in ResourceClaim status.devices",
	},
	{
		Name: CapabilityBindingConditions, KEP: 5007, FeatureGate: "DRADeviceBindingConditions", Stage: StageBeta,
		Meaning: "devices carry the declared bindingConditions and bindingFailureConditions, which the driver (with deviceStatus) or an attach controller outside it, the kit in a conformance run, sets in status.devices before a pod binds",
	},
	{
		Name: CapabilityAdminAccess, KEP: 5018, FeatureGate: "DRAAdminAccess", Stage: StageGA,
		Meaning: "the driver prepares devices for adminAccess requests, also devices other claims use",
	},
	{
		Name: CapabilityDeviceTaints, KEP: 5055, FeatureGate: "DRADeviceTaints", Stage: StageGA,
		Meaning: "the driver taints devices in its ResourceSlices (effects None, NoSchedule, NoExecute)",
	},
	{
		Name: CapabilityConsumableCapacity, KEP: 5075, FeatureGate: "DRAConsumableCapacity", Stage: StageBeta,
		Meaning: "devices with allowMultipleAllocations are shared by several claims, each consuming part of a capacity",
	},
	{
		Name: CapabilityFractionalCapacityRange, KEP: 5075, FeatureGate: "DRAFractionalCapacityRange", Stage: StageBeta,
		Requires: []CapabilityName{CapabilityConsumableCapacity},
		Meaning:  "capacity request policies have a validRange with a fractional min, max or step",
	},
	{
		Name: CapabilityDeviceMetadata, KEP: 5304, Stage: StageBeta,
		Meaning: "the driver writes device metadata files that containers read below /var/run/kubernetes.io/dra-device-attributes",
	},
	{
		Name: CapabilityListTypeAttributes, KEP: 5491, FeatureGate: "DRAListTypeAttributes", Stage: StageAlpha,
		Meaning: "devices publish list-valued attributes (ints, bools, strings, versions)",
	},
	{
		Name: CapabilityNodeAllocatableResources, KEP: 5517, FeatureGate: "DRANodeAllocatableResources", Stage: StageAlpha,
		Meaning: "devices map their capacity onto the node's allocatable cpu, memory or hugepages (nodeAllocatableResources)",
	},
	{
		Name: CapabilityOptionalNodeOperations, KEP: 5945, FeatureGate: "DRAOptionalNodeOperations", Stage: StageAlpha,
		Meaning: "slices set skipNodeOperations, so the kubelet skips NodePrepareResources or NodeUnprepareResources",
	},
	{
		Name: CapabilityDeviceCompatibilityGroups, KEP: 5963, FeatureGate: "DRADeviceCompatibilityGroups", Stage: StageAlpha,
		Requires: []CapabilityName{CapabilityPartitionableDevices},
		Meaning:  "counter consumptions list compatibilityGroups; devices sharing no group are never allocated together",
	},
	{
		Name: CapabilityNUMANodeAttribute, KEP: 6072, Stage: StageGA,
		Meaning: "devices publish the standard attribute resource.kubernetes.io/numaNode",
	},
}

// KnownCapabilities returns every optional capability, ordered by KEP
// number; the slice is the caller's.
func KnownCapabilities() []Capability {
	out := slices.Clone(capabilities)
	for i := range out {
		out[i].Requires = slices.Clone(out[i].Requires)
	}
	return out
}

// LookupCapability returns the capability called name.
func LookupCapability(name CapabilityName) (Capability, bool) {
	for _, c := range capabilities {
		if c.Name == name {
			c.Requires = slices.Clone(c.Requires)
			return c, true
		}
	}
	return Capability{}, false
}

// Claimed says whether the declaration claims the capability; an unknown
// name, which a valid declaration cannot claim, is never claimed.
func (d *Declaration) Claimed(name CapabilityName) bool {
	_, known := LookupCapability(name)
	return known && d.Capabilities[name]
}

func capabilityNames() []string {
	names := make([]string, len(capabilities))
	for i, c := range capabilities {
		names[i] = string(c.Name)
	}
	return names
}
