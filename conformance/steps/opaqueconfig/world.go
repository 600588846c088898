package opaqueconfig

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the opaque-config steps.
type world struct {
	*kit.World
}

// Steps binds the opaque-config steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).opaqueConfigSteps()
}
