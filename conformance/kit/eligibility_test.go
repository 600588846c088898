package kit

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"testing/fstest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"drakit.dev/drakit/conformance/report"
)

func TestEligibilityDecision(t *testing.T) {
	t.Parallel()
	offer := clusterOffer{gates: []string{"DRAPrioritizedList", "GenericWorkload"}, apis: []string{"v1", "resource.k8s.io/v1"}}
	tests := map[string]struct {
		offer clusterOffer
		Needs report.Needs
		want  string
	}{
		"needs nothing":          {offer, report.Needs{}, ""},
		"has the gate":           {offer, report.Needs{Gates: []string{"GenericWorkload"}}, ""},
		"serves the API":         {offer, report.Needs{APIs: []string{"resource.k8s.io/v1"}}, ""},
		"lacks a gate":           {offer, report.Needs{Gates: []string{"GenericWorkload", "DRAWorkloadResourceClaims"}}, "not eligible on this cluster: needs feature gate DRAWorkloadResourceClaims"},
		"lacks an API":           {offer, report.Needs{APIs: []string{"resource.k8s.io/v1alpha3"}}, "not eligible on this cluster: needs API resource.k8s.io/v1alpha3"},
		"lacks both":             {offer, report.Needs{Gates: []string{"DRAResourcePoolStatus"}, APIs: []string{"resource.k8s.io/v1alpha3"}}, "not eligible on this cluster: needs feature gate DRAResourcePoolStatus, API resource.k8s.io/v1alpha3"},
		"gates unknown":          {clusterOffer{apis: offer.apis}, report.Needs{Gates: []string{"DRAListTypeAttributes"}}, ""},
		"APIs unknown":           {clusterOffer{gates: offer.gates}, report.Needs{APIs: []string{"resource.k8s.io/v1alpha3"}}, ""},
		"gates unknown, API not": {clusterOffer{apis: offer.apis}, report.Needs{Gates: []string{"DRAListTypeAttributes"}, APIs: []string{"resource.k8s.io/v1alpha3"}}, "not eligible on this cluster: needs API resource.k8s.io/v1alpha3"},
		"no gate on":             {clusterOffer{gates: []string{}}, report.Needs{Gates: []string{"DRAListTypeAttributes"}}, "not eligible on this cluster: needs feature gate DRAListTypeAttributes"},
	}
	for name, tc := range tests {
		if got := tc.offer.notEligible(tc.Needs); got != tc.want {
			t.Errorf("%s: notEligible = %q, want %q", name, got, tc.want)
		}
	}
}

const eligibilityFeature = `Feature: eligibility

  @kep-1 @needs-gate-DRAListTypeAttributes
  Scenario: needs a gate that is off
    Given a ResourceClaim "c" requesting 2 devices
    Then the claim "c" is not allocated

  @kep-1 @needs-api-v1alpha3.resource.k8s.io
  Scenario: needs an API version not served
    Given a ResourceClaim "c" requesting 2 devices
    Then the claim "c" is not allocated

  @kep-1 @needs-gate-DRAPrioritizedList @needs-api-v1.resource.k8s.io
  Scenario: needs what the cluster has
    Given a ResourceClaim "c" requesting 2 devices
    Then the claim "c" is not allocated
`

// TestNotEligibleSkipped runs scenarios with eligibility tags through
// godog with the kit's hooks against a fake cluster: those the cluster
// lacks something for are skipped, with the reason in the report and no
// namespace made for them; the others run. A cluster whose gates and API
// versions the kit cannot read runs them all.
func TestNotEligibleSkipped(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, known bool) (report.Result, int64) {
		kube := fakeCluster(t)
		var namespaces atomic.Int64
		kube.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			namespaces.Add(1)
			return false, nil, nil
		})
		cfg := testConfig(t)
		cfg.Concurrency = 2
		var out bytes.Buffer
		cfg.Output = &out
		s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir,
			features: fstest.MapFS{"kep-1-eligibility/eligibility.feature": {Data: []byte(eligibilityFeature)}}}
		if known {
			s.gates = []string{"DRAPrioritizedList"}
			kube.Resources = []*metav1.APIResourceList{{GroupVersion: "v1"}, {GroupVersion: "resource.k8s.io/v1"}}
		}
		res, _, err := s.run(context.Background())
		if err != nil {
			t.Fatalf("run: %v\noutput:\n%s", err, out.String())
		}
		return res, namespaces.Load()
	}
	t.Run("known", func(t *testing.T) {
		t.Parallel()
		res, namespaces := run(t, true)
		want := map[string]string{
			"needs a gate that is off":        report.NotEligiblePrefix + "needs feature gate DRAListTypeAttributes",
			"needs an API version not served": report.NotEligiblePrefix + "needs API resource.k8s.io/v1alpha3",
			"needs what the cluster has":      "",
		}
		for _, sr := range res.Scenarios {
			reason, ok := want[sr.Name]
			switch {
			case !ok:
				t.Errorf("unexpected scenario %q", sr.Name)
			case reason == "" && sr.Status != report.StatusPassed:
				t.Errorf("%s: %s (%s), want passed", sr.Name, sr.Status, sr.Message)
			case reason != "" && (sr.Status != report.StatusSkipped || sr.Message != reason):
				t.Errorf("%s: %s (%q), want skipped: %q", sr.Name, sr.Status, sr.Message, reason)
			}
		}
		if len(res.Scenarios) != len(want) {
			t.Errorf("%d scenarios reported, want %d", len(res.Scenarios), len(want))
		}
		if namespaces != 1 {
			t.Errorf("%d namespaces made, want 1: none for a scenario the cluster is not eligible for", namespaces)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		res, _ := run(t, false)
		if res.Passed != 3 {
			t.Errorf("%+v, want all 3 passed when the kit cannot read the cluster's gates and API versions", res.Counts)
		}
	})
}
