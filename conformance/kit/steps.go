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
type stepDef struct {
	pattern string
	fn      any
	needs   func(n *scenarioNeeds, args []string)
}

// steps is every step the kit defines, one group per domain noun, bound to
// the world w.
func (w *world) steps() []stepDef {
	var all []stepDef
	for _, group := range [][]stepDef{w.clusterSteps(), w.driverSteps(), w.sliceSteps(), w.claimSteps(), w.podSteps(), w.deviceSteps(), w.partitionSteps(), w.poolSteps(), w.cdiSteps(), w.faultSteps(), w.lintSteps(), w.capacitySteps(), w.statusSteps(), w.alignmentSteps(), w.interposeSteps(), w.taintSteps(), w.taintRuleSteps(), w.evictionSteps(), w.healthSteps(), w.hardwareSteps(), w.podGroupSteps(), w.multiHostSteps(), w.prioritizedSteps(), w.opaqueConfigSteps(), w.quotaSteps(), w.adminAccessSteps(), w.poolStatusSteps(), w.extendedResourceSteps(), w.nodeOpsSteps(), w.bindingSteps(), w.metadataSteps(), w.nodeAllocSteps(), w.attributeSteps(), w.registrationSteps(), w.contractSteps(), w.podResourcesSteps(), w.fabricSteps(), w.torusSteps()} {
		all = append(all, group...)
	}
	return all
}

// sortedCopy returns s sorted, leaving s alone.
func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}
