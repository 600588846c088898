package conformance

import (
	"slices"
	"sort"
)

// stepDef binds a step pattern to its function. Patterns are anchored;
// functions take the scenario context first and return an error that reads
// like a finding, or (context, error) when they attach something.
type stepDef struct {
	pattern string
	fn      any
}

// allSteps is every step the kit defines, one group per domain noun.
func allSteps() []stepDef {
	var all []stepDef
	for _, group := range [][]stepDef{clusterSteps(), driverSteps(), sliceSteps(), claimSteps(), podSteps(), deviceSteps(), partitionSteps(), poolSteps(), cdiSteps(), faultSteps()} {
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
