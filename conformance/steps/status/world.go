package status

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for KEP-4817's steps.
type world struct {
	*kit.World
}

// Steps binds KEP-4817's steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).statusSteps()
}
