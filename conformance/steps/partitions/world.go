package partitions

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for KEP-4815's partition steps.
type world struct {
	*kit.World
	// named are the devices the scenario named ("a partitionable device
	// "big" with ... partitions"), by alias.
	named map[string]named
}

// Steps binds KEP-4815's partition steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w, named: map[string]named{}}).partitionSteps()
}
