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
//
// Contracts:
//   - Decode is strict (internal/strictyaml): YAML syntax, duplicate keys,
//     a second YAML document (with its line), a wrong apiVersion or kind,
//     unknown fields (case-sensitive) and wrongly typed values are errors. Parse and Load also Default and Validate. Every content error
//     is a *ValidationError (errors.Is ErrInvalid) that lists each problem
//     with its field path and, where the source has it, its line.
//   - Validate enforces the limits of resource.k8s.io/v1 as the API server
//     does, with the API's exported constants: list sizes of claims
//     (requests, constraints, config, firstAvailable, selectors, derived
//     attributes, allocation results), classes, slices (devices: 128, or 64
//     with taints, counters or list-type attributes; counter sets and
//     counters) and devices (attributes and capacities, attribute values,
//     taints, binding conditions, counter consumptions, compatibility
//     groups, capacity validValues), string lengths (driver, pool,
//     attribute names and values) and CEL selectors (length, estimated
//     cost, compiled as the API server compiles new expressions). Allocated
//     claims must hold devices a slice publishes, for requests they have,
//     and each device once, except adminAccess results and, with
//     ConsumableCapacity, allowMultipleAllocations devices under distinct
//     shareIDs.
//   - Default fills what the API server defaults and the allocators need
//     (allocationMode ExactCount, count 1), so hand-written files may omit it.
//   - Marshal is stable (same scenario, same bytes) and Parse(Marshal(s))
//     equals s.
//   - Features.Structured, (*Scenario).ClassLister and AllocatedState turn a
//     scenario into the inputs of structured.NewAllocator and of the
//     reference allocator; AllocatedState follows kube-scheduler (adminAccess
//     results are not in use; shareID results are shared only with the
//     ConsumableCapacity feature). Commit moves allocated claims into
//     AllocatedClaims, to play pods one after another.
package scenario
