package alignment

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the PCIe alignment steps.
type world struct {
	*kit.World
}

// Steps binds the PCIe alignment steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).alignmentSteps()
}
