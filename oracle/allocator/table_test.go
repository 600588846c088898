package allocator

import (
	"testing"

	"drakit.dev/drakit/oracle/allocator/internal/upstreamtable"
)

// TestUpstreamTable runs upstream's allocator test table (the semantic
// ground truth, read from the module cache at the version go.mod requires)
// against the reference allocator in first-fit mode, as is and forcing the
// complete search, and against upstream's own variants, every result
// through the checker (see internal/upstreamtable).
func TestUpstreamTable(t *testing.T) {
	upstreamtable.Run(t)
}
