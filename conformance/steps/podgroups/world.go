package podgroups

import "drakit.dev/drakit/conformance/kit"

// world is one scenario's world with what KEP-5729's steps remember.
type world struct {
	*kit.World
	// groups are the PodGroups the scenario created, by name; kept after
	// deletion, like the kit's pod records.
	groups map[string]*podGroupRecord
}

// Steps binds KEP-5729's steps to a scenario's world.
func Steps(w *kit.World) []kit.StepDef {
	return (&world{World: w, groups: map[string]*podGroupRecord{}}).podGroupSteps()
}
