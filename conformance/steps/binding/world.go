package binding

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what the binding steps remember.
type world struct {
	*kit.World
	// attach is the scenario's attach controller (KEP-5007).
	attach attachController
}

// Steps binds the steps of KEP-5007 and KEP-5945 to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	b := &world{World: w, attach: attachController{claimRV: map[string]string{}}}
	return append(b.bindingSteps(), b.nodeOpsSteps()...)
}
