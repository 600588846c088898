// Package scenario is the allocation what-if format: everything one Allocate
// call needs (feature set, device classes, ResourceSlices, the node, claims
// already allocated, claims to allocate) as one strict, versioned YAML file.
//
// It is the input of `drakit allocate -f`, the repro format the differential
// tests print when the reference and upstream allocators disagree, and the
// form of the hard-instance families used by tests and benchmarks.
//
//	apiVersion: allocator.drakit.dev/v1alpha1
//	kind: Scenario
//	features: {partitionableDevices: true, prioritizedList: true, ...}
//	node: {metadata: {name: node-1, labels: {...}}}
//	deviceClasses: [ ...resource.k8s.io/v1 DeviceClass... ]
//	resourceSlices: [ ...resource.k8s.io/v1 ResourceSlice... ]
//	allocatedClaims: [ ...ResourceClaims with status.allocation: devices in use... ]
//	claims: [ ...ResourceClaims to allocate, in order... ]
//
// Objects are the Kubernetes API types (resource.k8s.io/v1, core/v1) with
// their usual YAML field names; apiVersion/kind may be omitted on them.
// Unknown fields anywhere are errors naming the field path.
package scenario
