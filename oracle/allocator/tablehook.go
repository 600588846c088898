//go:build drakit_upstreamtable

package allocator

// SetCompleteOnly makes a skip the lazy first phase, so that every Allocate
// goes through the complete search. It is built only with the tag
// drakit_upstreamtable, by the temporary module in which
// internal/upstreamtable runs upstream's test table: that adapter lives in
// another module and cannot reach the unexported field.
func SetCompleteOnly(a *Allocator) {
	a.completeOnly = true
}
