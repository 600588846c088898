package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// featureEnabledMetric is the API server's metric with one sample per
// feature gate: 1 when the gate is enabled (component-base/featuregate).
const featureEnabledMetric = "kubernetes_feature_enabled"

// enabledFeatureGates returns the names of the feature gates the API server
// reports as enabled on its /metrics endpoint, sorted. Reading /metrics
// needs the nonResourceURL permission that cluster admins have; without it
// the error says so and the report says the gates are unknown.
func enabledFeatureGates(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	rc := kube.CoreV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return nil, errors.New("the kit's client cannot make raw requests (a fake clientset)")
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's /metrics for its feature gates: %w", err)
	}
	return parseEnabledFeatureGates(raw)
}

// parseEnabledFeatureGates reads the enabled gates from a Prometheus text
// exposition.
func parseEnabledFeatureGates(raw []byte) ([]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse the API server's metrics: %w", err)
	}
	family, ok := families[featureEnabledMetric]
	if !ok {
		return nil, fmt.Errorf("the API server's metrics have no %s", featureEnabledMetric)
	}
	var gates []string
	for _, m := range family.GetMetric() {
		if m.GetGauge().GetValue() != 1 {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				gates = append(gates, l.GetValue())
			}
		}
	}
	sort.Strings(gates)
	return gates, nil
}

// featureGates are the API server's enabled feature gates for the report;
// nil (unknown) when the kit cannot read them, which it logs.
func (s *suite) featureGates(ctx context.Context) []string {
	gates, err := enabledFeatureGates(ctx, s.kube)
	if err != nil {
		klog.FromContext(ctx).Info("The report cannot name the cluster's feature gates", "err", err)
		return nil
	}
	return gates
}

// driverVersion is Config.DriverVersion, else the images of the driver's
// pods ("images drakit.dev/driver:dev"), else "" (unknown).
func (s *suite) driverVersion(ctx context.Context) string {
	if s.cfg.DriverVersion != "" {
		return s.cfg.DriverVersion
	}
	if s.cfg.DriverPodSelector == "" {
		return ""
	}
	pods, err := s.kube.CoreV1().Pods(s.cfg.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: s.cfg.DriverPodSelector})
	if err != nil {
		klog.FromContext(ctx).Info("The report cannot name the driver's version", "err", err)
		return ""
	}
	var images []string
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if !slices.Contains(images, c.Image) {
				images = append(images, c.Image)
			}
		}
	}
	if len(images) == 0 {
		return ""
	}
	sort.Strings(images)
	return "images " + strings.Join(images, ", ")
}
