package attributes

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what the attribute steps remember.
type world struct {
	*kit.World
	// numaNodes are the NUMA nodes the scenario's claims select by the
	// standard numaNode attribute (KEP-6072), by claim name.
	numaNodes map[string]int64
}

// Steps binds the attribute steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w}).attributeSteps()
}
