// Package bench runs allocation scenarios through the upstream allocator
// (k8s.io/dynamic-resource-allocation/structured, v0.37.2) and the reference
// allocator with the same inputs, and times them. It is what the allocator
// benchmarks (go test -bench, run with -cpu 1), scripts/bench-allocator.sh
// and `drakit allocate --compare-upstream` share.
//
// Contracts: Upstream and Reference build a fresh allocator per call from
// the scenario (features, classes, slices, allocated state) with their own
// CEL cache, so no call sees another's caches; they return the results
// (nil when the claims do not fit), the wall time of NewAllocator plus
// Allocate, and an error for invalid input. A call that runs past the
// context's deadline returns an error wrapping context.DeadlineExceeded:
// callers treat it as a timeout, not as "does not fit".
package bench
