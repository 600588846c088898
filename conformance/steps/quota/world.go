package quota

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the device quota steps.
type world struct {
	*kit.World
}

// Steps binds the device quota steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).quotaSteps()
}
