// Package allocatortesting is upstream's shared allocator test table
// (k8s.io/dynamic-resource-allocation@v0.37.2,
// structured/internal/allocatortesting), copied so that one table runs
// against several implementations of the structured.NewAllocator contract:
// upstream's own allocator and drakit's reference allocator.
//
// allocator_testing.go and lexicographical_testing.go are the upstream files
// (Apache-2.0) with mechanical changes listed at their top. hooks.go is
// drakit's: the replacements for upstream-internal types and the ResultHook
// through which callers check every result the table produces (for example
// with the independent validity checker in reference/allocator/check).
//
// Entry points: TestAllocator and TestLexicographicalAllocator, called from a
// _test.go file with a constructor of the implementation under test.
package allocatortesting
