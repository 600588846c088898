// Package check is an independent validity checker for DRA allocation
// results: given the inputs of one Allocate call (features, allocated state,
// device classes, ResourceSlices, node, claims) and the AllocationResults an
// allocator returned for the claims, Check says whether the results are a
// valid allocation, and if not, every way in which they are not.
//
// It is written from the API documentation of resource.k8s.io/v1 and the
// DRA specification digest (docs dra-1.37-spec.md §1–§7, §15), never from an
// allocator's code, so that it can judge both upstream's allocator
// (k8s.io/dynamic-resource-allocation/structured) and drakit's reference
// allocator. It decides validity only, not optimality and not whether an
// earlier firstAvailable subrequest could have been chosen.
//
// Contract:
//
//	Check(ctx, Input, results) error
//
// results holds one AllocationResult per claim, in the order of
// Input.Claims. nil means "no result" and is always accepted. The returned
// error is nil for a valid allocation; otherwise it joins (errors.Join) one
// *Violation per problem, each naming claim, request, device and the Rule
// broken. errors.Is(err, RuleX) says whether rule X was broken; Violations
// lists them. Malformed input (nil node, nil claim, wrong number of results)
// gives an error wrapping ErrInvalidInput.
//
// Rules (see the Rule constants):
//   - a result device exists in a valid, complete pool of the result's driver
//     (highest generation only; all resourceSliceCount slices present; no
//     duplicate device names; every counter reference resolves) and is
//     reachable from the node (slice nodeName / nodeSelector / allNodes, or
//     the device's own fields under perDeviceNodeSelection);
//   - result request names are requests of the claim, or "<req>/<sub>" of a
//     firstAvailable request, one subrequest per request;
//   - ExactCount requests get exactly count devices; All requests get every
//     matching, reachable, available device, and no incomplete or invalid
//     pool reachable from the node holds a matching device;
//   - every device satisfies its class's and its request's CEL selectors;
//   - matchAttribute: every constrained device has the attribute, all values
//     equal (with list-type attributes: a non-empty common intersection);
//     distinctAttribute: all values pairwise different (lists: disjoint);
//   - no device is used twice, across claims or with AllocatedState, except
//     by admin access or on allowMultipleAllocations devices
//     (ConsumableCapacity), whose consumed capacities must sum to at most
//     each capacity, follow the capacity request policy, cover the request,
//     and carry a unique shareID;
//   - the counters consumed by all allocated devices of a pool (AllocatedState
//     included) stay within the pool's counter sets;
//   - NoSchedule and NoExecute taints are tolerated by the request
//     (DeviceTaints feature);
//   - admin access is set exactly on results of adminAccess requests;
//   - at most 32 device results per claim;
//   - the result's NodeSelector selects the node, and is set whenever a
//     device is not available on all nodes;
//   - no device needs a disabled feature (counters or per-device node
//     selection without PartitionableDevices, binding conditions without
//     DeviceBindingAndStatus, firstAvailable without PrioritizedList).
//
// Known leniency: an All request is not required to include
// allowMultipleAllocations devices (whether one still has room depends on
// capacity requests the checker does not re-solve).
package check
