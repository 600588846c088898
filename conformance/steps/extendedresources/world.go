package extendedresources

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what KEP-5004's steps remember.
type world struct {
	*kit.World
	extended extendedState
}

// Steps binds KEP-5004's steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).extendedResourceSteps()
}
