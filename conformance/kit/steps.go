package kit

import (
	"slices"
	"sort"
)

// stepDef binds a step pattern to its function, a method of the scenario's
// world. Patterns are anchored; functions take the scenario context first
// when they use it and return an error that reads like a finding, or
// (context, error) when they attach something or skip.
//
// needs, when set, adds what the step needs of the driver's devices to the
// scenario's needs, from the step's captured arguments: before a scenario
// runs, the kit sums its steps' needs into one demand and leases the
// devices (leases.go), so that concurrent scenarios never share a device.
type StepDef struct {
	Pattern string
	Fn      any
	Needs   func(n *ScenarioNeeds, args []string)
}

// A StepGroup is the steps of one step package (a KEP or a domain noun),
// bound to the scenario's world w. The kit calls it once per scenario, so
// whatever state the group keeps for its steps lives as long as that
// scenario and is never shared with another.
type StepGroup func(w *World) []StepDef

// Definitions are the step definitions of a run with groups beside the
// kit's own, bound to a world outside any run: for tools and tests that
// list the steps or match feature files against them, never to run them.
func Definitions(groups ...StepGroup) []StepDef {
	return (&World{Suite: &Suite{stepGroups: groups}}).steps()
}

// steps is every step of the run, bound to the world w: the kit's own
// groups, one per domain noun, then the run's step packages.
func (w *World) steps() []StepDef {
	var all []StepDef
	if w.Suite != nil {
		for _, group := range w.stepGroups {
			all = append(all, group(w)...)
		}
	}
	for _, group := range [][]StepDef{w.clusterSteps(), w.sliceSteps(), w.claimSteps(), w.podSteps(), w.deviceSteps(), w.cdiSteps(), w.heldSteps(), w.capabilitySteps()} {
		all = append(all, group...)
	}
	return all
}

// sortedCopy returns s sorted, leaving s alone.
func SortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}
