package torus

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what the torus steps remember.
type world struct {
	*kit.World
	torus torusState
}

// Steps binds the torus steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).torusSteps()
}
