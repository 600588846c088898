package live

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEnabledFeatureGates(t *testing.T) {
	raw := `# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"} 1
kubernetes_feature_enabled{name="DRADeviceCompatibilityGroups",stage="ALPHA"} 1
kubernetes_feature_enabled{name="DRAListTypeAttributes",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 12
`
	got, err := ParseEnabledGates([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"DRADeviceCompatibilityGroups", "DRAPartitionableDevices"}; !slices.Equal(got, want) {
		t.Errorf("gates = %v, want %v", got, want)
	}
	if _, err := ParseEnabledGates([]byte("apiserver_request_total 1\n")); err == nil || !strings.Contains(err.Error(), featureEnabledMetric) {
		t.Errorf("metrics without the gate metric: err = %v, want one naming %s", err, featureEnabledMetric)
	}
	if _, err := ParseEnabledGates([]byte("not { metrics")); err == nil {
		t.Error("garbage: no error")
	}
}
