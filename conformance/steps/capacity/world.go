package capacity

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what KEP-5075's steps remember.
type world struct {
	*kit.World
	// shared is the shared device the scenario's claims share, once
	// picked; asks are what its claims asked of it, by claim name.
	shared *sharedTarget
	asks   map[string]capacityAsk
}

// Steps binds KEP-5075's steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w, asks: map[string]capacityAsk{}}).capacitySteps()
}
