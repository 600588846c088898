// Package upstreamtable runs upstream's shared allocator test table, the
// semantic ground truth of structured.NewAllocator, against upstream's own
// allocator variants and drakit's reference allocator, every result also
// judged by drakit's independent checker (oracle/allocator/check).
//
// The table is upstream's package structured/internal/allocatortesting of
// k8s.io/dynamic-resource-allocation, at the version drakit's go.mod
// requires. Nothing of it is copied into this repository: Run, called from
// oracle/allocator's TestUpstreamTable, finds the module in the module
// cache (downloading it if needed), copies it into a temporary directory as
// the main module of a temporary build (so that its internal packages stay
// importable), with drakit's module replaced by this checkout, adds
// adapter.go (drakit's own code, built only there, with the tag
// drakit_upstreamtable) as the test of a package under structured/, and
// runs go test on it.
//
// The adapter runs TestAllocator and TestLexicographicalAllocator against
// the stable (without the lexicographical part, as upstream does),
// incubating and experimental variants, and against the reference
// allocator in first-fit mode, as is and with the complete search only
// (allocator.SetCompleteOnly, built with the same tag). It wraps each
// allocator so that every result goes through the checker before the table
// compares it with upstream's expectation. The few cases that also assert
// upstream's allocateOne count run fully against the reference allocator
// and end as skipped at that last assertion, with a message, since it has
// no such statistic.
package upstreamtable
