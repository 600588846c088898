package kubeletcontract

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world, for the kubelet-contract steps.
type world struct {
	*kit.World
}

// Steps binds the kubelet-contract steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).interposeSteps()
}
