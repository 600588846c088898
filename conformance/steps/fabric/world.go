package fabric

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the fabric steps.
type world struct {
	*kit.World
}

// Steps binds the fabric steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).fabricSteps()
}
