package contract

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the driver-contract steps.
type world struct {
	*kit.World
}

// Steps binds the driver-contract steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).contractSteps()
}
