package report

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Eligibility tags: a scenario that needs what a cluster may lack, a
// feature gate that is off by default (or a beta one a cluster may turn
// off) or an API version the API server does not serve by default, says
// so by tag (on the scenario or its Feature), so
// that the kit can find the cluster not eligible for it before it runs a
// step, and say so with NotEligiblePrefix.
const (
	// NeedsGateTagPrefix followed by a feature gate's name
	// (@needs-gate-DRAListTypeAttributes): the gate must be on.
	NeedsGateTagPrefix = "@needs-gate-"
	// NeedsAPITagPrefix followed by an API version as its APIService is
	// named, <version>.<group> (@needs-api-v1alpha3.resource.k8s.io): the
	// API server must serve it. Not group/version: Ginkgo labels, which the
	// tags also are (conformance/ginkgo), cannot hold a "/".
	NeedsAPITagPrefix = "@needs-api-"
)

var (
	gateName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// apiService is a Kubernetes version and a dotted API group.
	apiService = regexp.MustCompile(`^(v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)+)$`)
)

// Needs is what a scenario's eligibility tags say it needs of the cluster.
type Needs struct {
	// Gates are feature gates that must be on.
	Gates []string
	// APIs are API versions the API server must serve, as group/version
	// (resource.k8s.io/v1alpha3).
	APIs []string
}

// ParseNeeds reads the eligibility tags among a scenario's tags; other tags
// are not its business. A tag a pickle inherits twice counts once; a
// malformed one is an error that names it.
func ParseNeeds(tags []string) (Needs, error) {
	var n Needs
	for _, t := range tags {
		if gate, ok := strings.CutPrefix(t, NeedsGateTagPrefix); ok {
			if !gateName.MatchString(gate) {
				return Needs{}, fmt.Errorf("tag %s: %q is not a feature gate name (like DRAListTypeAttributes)", t, gate)
			}
			if !slices.Contains(n.Gates, gate) {
				n.Gates = append(n.Gates, gate)
			}
			continue
		}
		if name, ok := strings.CutPrefix(t, NeedsAPITagPrefix); ok {
			m := apiService.FindStringSubmatch(name)
			if m == nil {
				return Needs{}, fmt.Errorf("tag %s: %q is not an API version as <version>.<group> (like v1alpha3.resource.k8s.io)", t, name)
			}
			gv := m[2] + "/" + m[1]
			if !slices.Contains(n.APIs, gv) {
				n.APIs = append(n.APIs, gv)
			}
			continue
		}
		if strings.HasPrefix(t, "@needs-") {
			return Needs{}, fmt.Errorf("tag %s: eligibility tags start with %s or %s", t, NeedsGateTagPrefix, NeedsAPITagPrefix)
		}
	}
	return n, nil
}

// String lists the needs as the reports name them, gates first: "feature
// gate GenericWorkload, API scheduling.k8s.io/v1beta1"; "" for none.
func (n Needs) String() string {
	list := make([]string, 0, len(n.Gates)+len(n.APIs))
	for _, g := range n.Gates {
		list = append(list, "feature gate "+g)
	}
	for _, a := range n.APIs {
		list = append(list, "API "+a)
	}
	return strings.Join(list, ", ")
}
