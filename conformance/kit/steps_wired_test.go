package kit_test

import (
	"testing"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/kit"
)

// The kit's tests that run features run them with every step package of a
// run, as conformance.Run does; only this external package can import them.
func init() { kit.SetStepGroupsForTest(conformance.Steps) }

// TestStepPackagesWired: the kit's feature-running tests get every step
// package of a run, not none.
func TestStepPackagesWired(t *testing.T) {
	if got, want := len(kit.StepGroupsForTest()), len(conformance.Steps); got != want || want == 0 {
		t.Errorf("the kit's tests run with %d step packages, want conformance.Steps' %d", got, want)
	}
}
