// Package live takes a running cluster's allocation state as an allocation
// scenario (oracle/allocator/scenario) and judges the scheduler's
// decisions with the reference allocator and its independent checker.
//
// Capture reads, through the API server, everything kube-scheduler's DRA
// plugin allocates from for one node: the Node, every ResourceSlice and
// DeviceClass, the claims already allocated (the devices in use) and the
// claims to allocate, with the allocator features that the cluster's
// feature gates enable (FeaturesFromGates; the API server reports its gates
// on /metrics, EnabledGates). The slices are the scheduler's view of them:
// each DeviceTaintRule's taint is added to the devices it selects
// (KEP-5055), by upstream's ResourceSlice tracker. The result is a plain
// Scenario: `drakit allocate -f` replays it, and the kit writes it next to
// a finding.
//
// On a Scenario:
//   - Allocate runs the reference allocator, which is complete where
//     upstream's first-fit search may time out: no result proves that no
//     allocation exists, and then the explanation says which request,
//     selector, constraint or counter stands in the way.
//   - Check judges allocations the scheduler made with the checker written
//     from the specification (oracle/allocator/check).
//
// Contracts: Capture only reads; a claim to allocate must exist and carry
// no allocation, one that is allocated is an error that says so. The
// scenario is a snapshot: another writer may change the cluster meanwhile,
// so callers judge devices that nobody else uses (the conformance kit's
// device leases guarantee that).
package live
