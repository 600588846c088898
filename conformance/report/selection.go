package report

import (
	"io/fs"
	"slices"
	"strings"
)

// Selected returns the scenarios (outline rows included) of the feature
// files in fsys that the godog tag filter tags selects, as godog selects
// them: alternatives joined by ",", terms by "&&", "~" negates a term, "@"
// is optional. An empty filter selects every scenario. The results carry no
// status; a runner counts them to show progress.
func Selected(fsys fs.FS, tags string) ([]ScenarioResult, error) {
	all, err := allScenarios(fsys)
	if err != nil {
		return nil, err
	}
	var out []ScenarioResult
	for _, s := range all {
		if MatchesTags(tags, s.Tags) {
			out = append(out, s)
		}
	}
	return out, nil
}

// MatchesTags says whether a scenario with these tags passes the godog tag
// filter (see Selected).
func MatchesTags(filter string, tags []string) bool {
	if filter == "" {
		return true
	}
	has := func(tag string) bool {
		return slices.ContainsFunc(tags, func(t string) bool { return strings.ReplaceAll(t, "@", "") == tag })
	}
	for _, alt := range strings.Split(filter, ",") {
		if strings.TrimSpace(alt) == "" {
			continue
		}
		all := true
		for _, term := range strings.Split(alt, "&&") {
			term = strings.ReplaceAll(strings.TrimSpace(term), "@", "")
			if negated, ok := strings.CutPrefix(term, "~"); ok {
				all = all && !has(negated)
			} else {
				all = all && has(term)
			}
		}
		if all {
			return true
		}
	}
	return false
}
