package pools

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the steps of the kit's test driver's
// pools.
type world struct {
	*kit.World
}

// Steps binds the pool steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).poolSteps()
}
