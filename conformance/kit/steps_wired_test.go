package kit_test

import (
	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/kit"
)

// The kit's tests that run features run them with every step package of a
// run, as conformance.Run does; only this external package can import them.
func init() { kit.SetStepGroupsForTest(conformance.Steps) }
