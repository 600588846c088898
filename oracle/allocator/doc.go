// Package allocator is drakit's reference DRA allocator: a drop-in
// replacement for k8s.io/dynamic-resource-allocation/structured v0.37.2 that
// is complete and fast where upstream's first-fit search is exponential,
// and that can optionally pack allocations to keep capacity usable.
//
// # Contract
//
// New and NewWithOptions take the same inputs as structured.NewAllocator
// (features, allocated state, class lister, all ResourceSlices of the
// cluster, CEL cache); Allocate has upstream's signature and meaning: one
// AllocationResult per claim, nil with a nil error when the claims do not
// fit on the node, an error for invalid input (the same cases and messages
// as upstream's incubating variant: disabled features in use, missing
// class, empty selector or constraint, CEL compile or runtime errors,
// oversized claims beyond AllocationResultsMaxSize=32, "All" on an
// incomplete or invalid pool, constraints that "All" devices cannot meet),
// "invalid resource pools were encountered" wrapping
// structured.ErrFailedAllocationOnNode when nothing fits and a pool was
// invalid, context cancellation ("filter operation aborted"), and
// ErrStepBudget when Options.StepBudget is used up. The allocator is safe
// for concurrent use. Explain (or AllocateExplained) says why the last
// failed call found nothing: which claim and request, and, naming the
// devices each applies to, the real obstacles: a device count, selectors,
// a device allocated to another claim or taken in this call by another
// request of the claim or an earlier claim, a constraint (the attribute,
// and whether the value is missing, differs or repeats; a matchAttribute
// constraint whose requests need more devices than share any one value is
// named as one that cannot be met), the counter of a counter set that ran
// out and what used it, a taint, compatibility groups, capacity.
//
// Semantics follow upstream v0.37.2 feature by feature: pool gathering
// (node name, node selector, all nodes, per-device node selection, stale
// generations, incomplete pools, duplicate device names and missing
// counter sets make a pool invalid, binding-condition pools last, pools by
// driver and name, slices by name), class and request CEL selectors,
// ExactCount and All, firstAvailable, matchAttribute and distinctAttribute
// (set semantics with DRAListTypeAttributes), partitionable devices with
// counter sets in separate slices of the pool, consumable capacity with
// request policies and share IDs, taints and tolerations, admin access,
// binding conditions, compatibility groups, optional node operations,
// derived attributes (DRADerivedAttributes: a request's derived attribute
// is its own CEL value per device, replacing the device attribute of that
// name in the claim's matchAttribute and distinctAttribute constraints for
// that request only; evaluated when the search first adds the device to a
// constraint, cached per expression and device; compile and evaluation
// errors with upstream's text, reported, like upstream's, only for a
// device the search tries to add; rejected when the feature is off), the
// result's configs and NodeSelector, and feature gating of all of these.
// That includes a quirk of variant selection: when every enabled feature is
// one of AdminAccess, PrioritizedList, PartitionableDevices and
// DeviceTaints, structured.NewAllocator picks its stable variant, which
// predates distinctAttribute (KEP-5075; the API server drops the field
// unless DRAConsumableCapacity is on) and rejects it as "empty constraint";
// the reference allocator returns the same error for that feature set and
// honours the constraint for every other one, as upstream does.
// Upstream's own test table (structured/internal/allocatortesting of
// k8s.io/dynamic-resource-allocation, read from the module cache at the
// version go.mod requires, never copied) runs against this package in
// table_test.go through internal/upstreamtable, once as is and once forcing
// the complete search, every result also judged by package check.
//
// # Algorithm
//
// In ModeFirstFit, Allocate returns exactly the solution upstream returns:
// the first one in upstream's enumeration order (claims, requests,
// firstAvailable alternatives in order, then devices in published order,
// combinations within one request). It gets there in two phases that
// enumerate in that same order, after a counting pre-check:
//
//  0. Before any selector is evaluated: unless a device allows multiple
//     allocations, the requests without admin access (smallest
//     firstAvailable alternative) must not need more devices than the node
//     has unallocated. This rejects "n+1 single-device claims on n
//     devices" (H5, H5c) in microseconds.
//  1. A lazy depth-first search that evaluates selectors only for the
//     devices it looks at (as upstream does), bounded to 32+4·devices
//     candidate examinations. Easy inputs end here at upstream's cost or
//     lower (selector results are shared between identical requests).
//  2. Otherwise the complete search: candidate lists per request and
//     subrequest; at every step a relaxation of everything still to place
//     is checked — per-request counts of usable devices (free, counters
//     left, compatible with the claim's constraint state, i.e. candidates
//     grouped by the matchAttribute value already fixed), lower bounds of
//     counter consumption per counter, a bipartite matching of device
//     slots to distinct free devices, and per distinctAttribute constraint
//     a matching of the slots it governs to distinct attribute values still
//     offered by usable candidates (requests sharing their candidates form
//     one block) — and the branch is cut when it fails; constraint values
//     are taken per request and device, as each request sees them (a
//     derived attribute gives a request its own values);
//     devices that are interchangeable (same candidate membership for every
//     request, same counters, compatibility groups and constraint attribute
//     values, derived ones included) are tried once per step (symmetry breaking across identical
//     devices, requests and claims). Pruning only removes branches without
//     a solution, so the first solution found is still upstream's. Before
//     it, with several claims, each claim is searched on its own: other
//     claims only take resources away, so a claim that does not fit alone
//     (say, its own requests use up a shared device's capacity, which the
//     relaxation does not model) ends the search before it backtracks
//     through unrelated earlier claims.
//
// Counting pre-checks (9 claims on 8 GPUs, H5), scarce-device requests
// placed late (H1, H2), NUMA alignment (H3, H3b) and partition counters
// (H4) are all decided by the bound without exponential enumeration.
//
// ModePacking replaces the device order within each request by a score:
// devices of counter sets that are already in use first (fullest first),
// then devices sharing the fewest attribute values with free devices the
// request cannot use (those are the partners a later claim will need, such
// as the NIC on the same NUMA node), then published order. The search and
// its completeness are unchanged; only which valid allocation comes first.
//
// # Deviations from upstream
//
//   - firstAvailable and device choices follow upstream's order, but
//     request-level alternatives that can never fit the 32-device claim
//     limit are skipped up front rather than discovered during the search.
//   - Selector runtime errors: the complete phase evaluates every device's
//     selectors, so a CEL runtime error on a device that upstream's search
//     would not have reached (because it found a solution first) is still
//     reported. The lazy phase reports exactly the errors upstream hits.
//     Conversely, claims that the counting pre-check rejects get nil
//     without any selector being evaluated, where upstream might first hit
//     a CEL runtime error and return it. Derived attribute errors are
//     reported only where upstream reports them, when the search tries to
//     add the device; but the complete phase's bounds prune branches that
//     upstream explores, so an error upstream would hit in a branch without
//     a solution may not be reported (the relaxations treat a failed
//     derivation as a value that fits, so they never prune because of it).
//   - Counters are compared as int64 at a per-counter decimal scale that
//     represents every value of that counter exactly (values beyond about
//     9·10^18 of their finest scale are rounded).
//   - Share IDs are random UUIDs like upstream's; results differ only there.
//   - Upstream's NumAllocateOneInvocations statistic does not exist here.
package allocator
