package faults

import (
	"slices"

	"drakit.dev/drakit/conformance/inventory"
	"drakit.dev/drakit/conformance/kit"
)

// world is one scenario's world, for the steps of hardware faults and what
// they cause.
type world struct {
	*kit.World
	// taint is what the KEP-5055 steps remember: named devices, rules.
	taint taintState
	// fault is the hardware fault the scenario injected, once it did.
	fault *injectedFault
}

// Steps binds the steps of device health (KEP-4680), device taints, taint
// rules and evictions (KEP-5055) and the faults that cause them to a
// scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	x := &world{World: w, taint: taintState{devices: map[string]inventory.Device{}, rules: map[string]string{}}}
	return slices.Concat(x.faultSteps(), x.taintSteps(), x.taintRuleSteps(), x.evictionSteps(), x.healthSteps(), x.hardwareSteps())
}
