package live

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
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/cel"

	"drakit.dev/drakit/oracle/allocator"
	"drakit.dev/drakit/oracle/allocator/check"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

// featureEnabledMetric is the API server's metric with one sample per
// feature gate: 1 when the gate is enabled (component-base/featuregate).
const featureEnabledMetric = "kubernetes_feature_enabled"

// EnabledGates returns the feature gates the API server reports as enabled
// on its /metrics endpoint, sorted. Reading /metrics needs the
// nonResourceURL permission that cluster admins have.
func EnabledGates(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	rc := kube.CoreV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return nil, errors.New("read the API server's feature gates: the client cannot make raw requests (a fake clientset)")
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's /metrics for its feature gates: %w", err)
	}
	return ParseEnabledGates(raw)
}

// ParseEnabledGates reads the enabled gates from a Prometheus text
// exposition of the API server's metrics.
func ParseEnabledGates(raw []byte) ([]string, error) {
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

// FeaturesFromGates returns the allocator features kube-scheduler enables
// with these feature gates (the gate names of structured.Features.Set).
func FeaturesFromGates(gates []string) scenario.Features {
	on := func(names ...string) bool {
		for _, n := range names {
			if !slices.Contains(gates, n) {
				return false
			}
		}
		return true
	}
	return scenario.Features{
		AdminAccess:             on("DRAAdminAccess"),
		CompatibilityGroups:     on("DRADeviceCompatibilityGroups"),
		ConsumableCapacity:      on("DRAConsumableCapacity"),
		DerivedAttributes:       on("DRADerivedAttributes"),
		DeviceBindingAndStatus:  on("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
		DeviceTaints:            on("DRADeviceTaints"),
		FractionalCapacityRange: on("DRAFractionalCapacityRange"),
		ListTypeAttributes:      on("DRAListTypeAttributes"),
		OptionalNodeOperations:  on("DRAOptionalNodeOperations"),
		PartitionableDevices:    on("DRAPartitionableDevices"),
		PrioritizedList:         on("DRAPrioritizedList"),
	}
}

// Capture reads the cluster's state for the claims named judged on node:
// they are the scenario's claims (in that order), every other allocated
// claim of the cluster is in use. A judged claim may be allocated (to Check
// the scheduler's decision) or not (to Allocate it).
func Capture(ctx context.Context, kube kubernetes.Interface, features scenario.Features, node string, judged []types.NamespacedName) (*scenario.Scenario, error) {
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("capture the allocation state: get node %s: %w", node, err)
	}
	sl, err := schedulerSlices(ctx, kube)
	if err != nil {
		return nil, fmt.Errorf("capture the allocation state: %w", err)
	}
	classes, err := kube.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("capture the allocation state: list DeviceClasses: %w", err)
	}
	claims, err := kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("capture the allocation state: list ResourceClaims: %w", err)
	}
	at := map[types.NamespacedName]int{}
	names := make([]string, len(judged))
	for i, j := range judged {
		at[j], names[i] = i, j.String()
	}
	n = n.DeepCopy()
	stripMeta(&n.ObjectMeta)
	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Features: features, Node: n,
		Name:   fmt.Sprintf("live state of node %s for %s", node, strings.Join(names, ", ")),
		Claims: make([]*resourceapi.ResourceClaim, len(judged))}
	for _, x := range sl {
		x = x.DeepCopy()
		stripMeta(&x.ObjectMeta)
		s.ResourceSlices = append(s.ResourceSlices, x)
	}
	for i := range classes.Items {
		x := classes.Items[i].DeepCopy()
		stripMeta(&x.ObjectMeta)
		s.DeviceClasses = append(s.DeviceClasses, x)
	}
	for i := range claims.Items {
		c := claims.Items[i].DeepCopy()
		stripMeta(&c.ObjectMeta)
		if j, ok := at[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}]; ok {
			s.Claims[j] = c
			continue
		}
		if c.Status.Allocation != nil {
			s.AllocatedClaims = append(s.AllocatedClaims, c)
		}
	}
	for i, c := range s.Claims {
		if c == nil {
			return nil, fmt.Errorf("capture the allocation state: claim %s does not exist", judged[i])
		}
	}
	return s, nil
}

// stripMeta drops what a scenario does not need and what bloats it:
// managed fields and the last-applied annotation.
func stripMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, v1.LastAppliedConfigAnnotation)
}

// celCacheSize is the compiled-expression cache of one Allocate.
const celCacheSize = 64

// Allocate runs the reference allocator on the scenario's claims, none of
// which may be allocated yet. It returns one result per claim, or none with
// the explanation of why they do not fit on the node; an invalid pool is an
// error, as for the scheduler.
func Allocate(ctx context.Context, s *scenario.Scenario) ([]resourceapi.AllocationResult, string, error) {
	for _, c := range s.Claims {
		if c.Status.Allocation != nil {
			return nil, "", fmt.Errorf("allocate %s/%s: it is allocated already", c.Namespace, c.Name)
		}
	}
	a, err := allocator.New(ctx, s.Features.Structured(), s.AllocatedState(), s.ClassLister(), s.ResourceSlices,
		cel.NewCache(celCacheSize, s.Features.CEL()))
	if err != nil {
		return nil, "", err
	}
	return a.AllocateExplained(ctx, s.Node, s.Claims)
}

// Check judges the allocations of the scenario's claims (their
// status.allocation, which each must have) against the specification: the
// devices exist on the node and match the classes, selectors and
// constraints, none is in use by another claim, counters hold. nil means
// valid; otherwise the joined violations.
func Check(ctx context.Context, s *scenario.Scenario) error {
	results := make([]resourceapi.AllocationResult, len(s.Claims))
	for i, c := range s.Claims {
		if c.Status.Allocation == nil {
			return fmt.Errorf("check the allocation of %s/%s: it is not allocated", c.Namespace, c.Name)
		}
		results[i] = *c.Status.Allocation
	}
	in := check.Input{Features: s.Features.Structured(), AllocatedState: s.AllocatedState(), Classes: s.DeviceClasses,
		Slices: s.ResourceSlices, Node: s.Node, Claims: s.Claims}
	return check.Check(ctx, in, results)
}
