package registration

import (
	"slices"

	"drakit.dev/drakit/conformance/kit"
)

// world is one scenario's world, for the steps of the driver's life on
// the node.
type world struct {
	*kit.World
	// stop is what the kit saw when the scenario stopped the driver, once
	// it did.
	stop *driverStop
}

// Steps binds the steps of the driver's registration with the kubelet and
// of its stops and restarts to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	x := &world{World: w}
	return slices.Concat(x.driverSteps(), x.registrationSteps())
}
