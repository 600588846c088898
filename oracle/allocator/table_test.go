package allocator

import (
	"strings"
	"testing"

	"drakit.dev/drakit/oracle/allocator/internal/upstreamtable"
)

// TestUpstreamTable runs upstream's allocator test table (the semantic
// ground truth, read from the module cache at the version go.mod requires)
// against the reference allocator in first-fit mode, as is and forcing the
// complete search, and against upstream's own variants, every result
// through the checker (see internal/upstreamtable).
func TestUpstreamTable(t *testing.T) {
	summary := upstreamtable.Run(t)
	// Three upstream variants and drakit's two modes, each judged by the checker.
	if runs := strings.Count(summary, "the checker judged"); runs < 5 {
		t.Errorf("the checker judged the results of %d table runs, want at least 5:\n%s", runs, summary)
	}
}
