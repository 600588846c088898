package nodeselection

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the steps of devices that are not
// local to one node.
type world struct {
	*kit.World
}

// Steps binds the node-selection steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).multiHostSteps()
}
