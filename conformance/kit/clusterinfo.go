package kit

import (
	"context"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// featureGates are the API server's enabled feature gates for the report;
// nil (unknown) when the kit cannot read them, which it logs.
func (s *Suite) featureGates(ctx context.Context) []string {
	if _, err := s.allocatorFeatures(ctx); err != nil {
		klog.FromContext(ctx).Info("The report cannot name the cluster's feature gates", "err", err)
		return nil
	}
	return s.gates
}

// driverVersion is Config.DriverVersion, else the images of the driver's
// pods ("images drakit.dev/driver:dev"), else "" (unknown).
func (s *Suite) driverVersion(ctx context.Context) string {
	if s.Driver.DriverVersion != "" {
		return s.Driver.DriverVersion
	}
	if s.Driver.DriverPodSelector == "" {
		return ""
	}
	pods, err := s.Kube.CoreV1().Pods(s.Driver.DriverNamespace).List(ctx, metav1.ListOptions{LabelSelector: s.Driver.DriverPodSelector})
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
