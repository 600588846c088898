package report

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestCatalogueChecks: the catalogue counts and marks cluster checks and
// names what a scenario needs of the cluster; a malformed eligibility tag
// is an error naming the scenario's line.
func TestCatalogueChecks(t *testing.T) {
	t.Parallel()
	const feature = `@needs-gate-DRAResourcePoolStatus
Feature: pools

  @kep-7 @core
  Scenario: the driver's pools
    Then it works

  @kep-7 @extended @cluster-check @needs-api-v1alpha3.resource.k8s.io
  Scenario Outline: the API server rejects <what>
    Then it works

    Examples:
      | what |
      | a    |
      | b    |
`
	var b strings.Builder
	if err := WriteCatalogue(&b, fstest.MapFS{"kep-7-pools/pools.feature": {Data: []byte(feature)}}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"3 scenarios over 1 KEPs: 1 check the driver, 2 the cluster (@cluster-check: ",
		"| KEP-7 | pools | 1 | 2 | 1 | 2 |",
		"- core, driver check, needs feature gate DRAResourcePoolStatus: the driver's pools (`kep-7-pools/pools.feature`)",
		"- extended, cluster check, needs feature gate DRAResourcePoolStatus, API resource.k8s.io/v1alpha3: the API server rejects b (`kep-7-pools/pools.feature`)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("catalogue lacks %q:\n%s", want, got)
		}
	}
	bad := strings.Replace(feature, "@needs-api-v1alpha3.resource.k8s.io", "@needs-api-v1alpha3", 1)
	err := WriteCatalogue(&b, fstest.MapFS{"kep-7-pools/pools.feature": {Data: []byte(bad)}})
	if err == nil || !strings.Contains(err.Error(), `kep-7-pools/pools.feature:14: tag @needs-api-v1alpha3: "v1alpha3" is not an API version`) {
		t.Errorf("catalogue of a malformed eligibility tag: %v", err)
	}
}
