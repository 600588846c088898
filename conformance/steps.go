package conformance

import (
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/steps/podgroups"
)

// Steps are the step packages of a run, beside the kit's own steps: one
// line per package. A new KEP adds its package here and its feature
// directory under features/, and touches nothing else.
var Steps = []kit.StepGroup{
	podgroups.Steps,
}
