package nodealloc

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"drakit.dev/drakit/conformance/kit"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// driverMapsCPU finds the capacity of the driver's devices that maps onto
// node allocatable cpu: a device of the driver that allows multiple
// allocations and maps cpu with a capacityKey. 1.37.2's scheduler turns a
// capacityKey mapping into an amount only through the result's
// consumedCapacity, which only shares of such devices have (it fails the
// pod's scheduling with "ConsumedCapacity is nil" otherwise).
func (w *world) driverMapsCPU(ctx context.Context) error {
	slices, err := w.DriverSlices(ctx)
	if err != nil {
		return err
	}
	seen := 0
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			seen++
			m := d.NodeAllocatableResources[corev1.ResourceCPU].Mapping
			if m == nil || m.CapacityKey == nil || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
				continue
			}
			if _, ok := d.Capacity[*m.CapacityKey]; !ok {
				return fmt.Errorf("device %s/%s maps cpu onto capacity %s, which it does not publish", s.Spec.Pool.Name, d.Name, *m.CapacityKey)
			}
			w.nodeAlloc.cpuKey = *m.CapacityKey
			return nil
		}
	}
	return fmt.Errorf("none of the %d devices of driver %s allows multiple allocations and maps a capacity onto node allocatable cpu (nodeAllocatableResources[cpu].mapping.capacityKey)", seen, w.Driver.DriverName)
}

// claimMappedCPU creates a claim for one device of the driver's DeviceClass
// consuming amount of the capacity that maps onto cpu.
func (w *world) claimMappedCPU(ctx context.Context, name, amount string) error {
	if w.nodeAlloc.cpuKey == "" {
		return fmt.Errorf("claim %s: no capacity that maps onto cpu is known (the step \"the driver publishes a device that maps a capacity onto node allocatable cpu\" must come first)", name)
	}
	q, err := resource.ParseQuantity(amount)
	if err != nil {
		return fmt.Errorf("claim %s: amount %q: %w", name, amount, err)
	}
	req := kit.ExactRequest("cpu", w.Driver.DeviceClass(), 1)
	req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{w.nodeAlloc.cpuKey: q}}
	claim := kit.NewClaim(name, resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}})
	if _, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceClaim %s: %w", name, err)
	}
	w.Ledger.Add(kit.KindClaim, name)
	return nil
}

// createCPUPod creates a probe pod whose container requests milli cpu and
// uses the claim (none for "").
func (w *world) createCPUPod(ctx context.Context, name string, milli int64, claim string) error {
	var claims []kit.PodClaim
	if claim != "" {
		claims = []kit.PodClaim{{Name: claim, Claim: claim}}
	}
	pod := kit.ProbePod(w.Suite, name, claims)
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
	return w.CreateProbePod(ctx, pod)
}

func (w *world) podRequestingCPUWithClaim(ctx context.Context, name, cpu, claim string) error {
	q, err := resource.ParseQuantity(cpu)
	if err != nil {
		return fmt.Errorf("pod %s: cpu %q: %w", name, cpu, err)
	}
	return w.createCPUPod(ctx, name, q.MilliValue(), claim)
}

// podFreeCPUWithClaim creates a pod whose container requests all the cpu
// the node has free (freeCPUMilli) and that uses the claim on top.
func (w *world) podFreeCPUWithClaim(ctx context.Context, name, claim string) error {
	free, node, err := w.freeCPUMilli(ctx)
	if err != nil {
		return err
	}
	if free <= 0 {
		return fmt.Errorf("node %s has no free cpu (allocatable less its pods' requests: %dm); the scenario needs some", node, free)
	}
	return w.createCPUPod(ctx, name, free, claim)
}

func (w *world) podFreeCPU(ctx context.Context, name string) error {
	return w.podFreeCPUWithClaim(ctx, name, "")
}

// podUnschedulableSaying waits until the scheduler marks the pod
// unschedulable with a message that contains text.
func (w *world) podUnschedulableSaying(ctx context.Context, name, text string) error {
	return kit.Poll(ctx, w.Cfg.Timeouts.PodStart, fmt.Sprintf("pod %s to be marked unschedulable with %q", name, text), func(ctx context.Context) (bool, string, error) {
		pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if pod.Spec.NodeName != "" {
			return false, "", fmt.Errorf("pod %s was scheduled to node %s, expected it to stay pending with %q (%s)", name, pod.Spec.NodeName, text, kit.DescribePod(pod))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, text) {
				return true, "", nil
			}
		}
		return false, kit.DescribePod(pod), nil
	})
}

// podStatusMapsClaim compares the pod's
// status.nodeAllocatableResourceClaimStatuses entry of the claim with what
// the claim's allocation (consumedCapacity) and the driver's slice
// (nodeAllocatableResources) make of it (expectedNodeAlloc), and with the
// containers that use the claim. The entry must map some cpu: a claim that
// maps nothing proves nothing.
func (w *world) podStatusMapsClaim(ctx context.Context, podName, claimName string) error {
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s: %w", podName, err)
	}
	actual, err := w.PodClaimName(ctx, podName, claimName)
	if err != nil {
		return err
	}
	claim, err := w.Kube.ResourceV1().ResourceClaims(w.Ns).Get(ctx, actual, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ResourceClaim %s: %w", actual, err)
	}
	if claim.Status.Allocation == nil {
		return fmt.Errorf("claim %s is not allocated", actual)
	}
	driverSlices, err := w.DriverSlices(ctx)
	if err != nil {
		return err
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == w.Driver.DriverName {
			results = append(results, r)
		}
	}
	mapped, overhead, err := expectedNodeAlloc(results, func(r resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error) {
		for _, s := range driverSlices {
			if s.Spec.Pool.Name != r.Pool {
				continue
			}
			for i := range s.Spec.Devices {
				if s.Spec.Devices[i].Name == r.Device {
					return &s.Spec.Devices[i], nil
				}
			}
		}
		return nil, fmt.Errorf("claim %s: allocated device %s/%s is in no slice of driver %s", actual, r.Pool, r.Device, w.Driver.DriverName)
	})
	if err != nil {
		return err
	}
	if q := mapped[corev1.ResourceCPU]; q.Sign() <= 0 {
		return fmt.Errorf("claim %s: its allocation maps no cpu (results %s): nothing for the scheduler to count", actual, formatResults(results))
	}
	var entry *corev1.NodeAllocatableResourceClaimStatus
	for i := range pod.Status.NodeAllocatableResourceClaimStatuses {
		if s := &pod.Status.NodeAllocatableResourceClaimStatuses[i]; s.ResourceClaimName == actual {
			entry = s
		}
	}
	if entry == nil {
		return fmt.Errorf("pod %s: status.nodeAllocatableResourceClaimStatuses has no entry for claim %s (it has %d); expected mapping %s",
			podName, actual, len(pod.Status.NodeAllocatableResourceClaimStatuses), formatMapped(mapped))
	}
	var problems []string
	got := map[corev1.ResourceName]resource.Quantity{}
	for _, m := range entry.Mapping {
		if m.Quantity != nil {
			got[m.Name] = *m.Quantity
		}
	}
	if !sameQuantities(got, mapped) {
		problems = append(problems, fmt.Sprintf("mapping %s, expected %s", formatMapped(got), formatMapped(mapped)))
	}
	if len(entry.Overhead) != len(overhead) {
		problems = append(problems, fmt.Sprintf("%d overhead entries, expected %d", len(entry.Overhead), len(overhead)))
	}
	for _, o := range entry.Overhead {
		want, ok := overhead[o.Name]
		if !ok || !sameOptional(o.PerPod, want.PerPod) || !sameOptional(o.PerContainer, want.PerContainer) {
			problems = append(problems, fmt.Sprintf("overhead of %s perPod %s perContainer %s, expected perPod %s perContainer %s",
				o.Name, quantityString(o.PerPod), quantityString(o.PerContainer), quantityString(want.PerPod), quantityString(want.PerContainer)))
		}
	}
	var users []string
	for _, c := range pod.Spec.Containers {
		for _, rc := range c.Resources.Claims {
			if rc.Name == claimName {
				users = append(users, c.Name)
			}
		}
	}
	if !slices.Equal(kit.SortedCopy(entry.Containers), kit.SortedCopy(users)) {
		problems = append(problems, fmt.Sprintf("containers %v, expected %v (the containers that use the claim)", entry.Containers, users))
	}
	if len(problems) > 0 {
		return fmt.Errorf("pod %s: status.nodeAllocatableResourceClaimStatuses of claim %s: %s", podName, actual, strings.Join(problems, "; "))
	}
	return nil
}

// podCgroupShares reads the pod's cgroup on the node and checks the cpu
// weight the kubelet set: its containers' cpu requests plus what its
// claims map onto cpu (pod.status, which podStatusMapsClaim holds to the
// allocation), as 1.37.2's ResourceConfigForPod computes it.
func (w *world) podCgroupShares(ctx context.Context, name string) (context.Context, error) {
	if w.Cfg.NodeCgroupRoot == "" {
		return kit.Skip(ctx, "the kit cannot read the node's cgroups: no --node-cgroup-root (/sys/fs/cgroup on the node)")
	}
	pod, err := w.Kube.CoreV1().Pods(w.Ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ctx, fmt.Errorf("get pod %s: %w", name, err)
	}
	var requested, mapped int64
	for _, c := range pod.Spec.Containers {
		requested += c.Resources.Requests.Cpu().MilliValue()
	}
	for _, s := range pod.Status.NodeAllocatableResourceClaimStatuses {
		mapped += mappedMilli(s, corev1.ResourceCPU)
	}
	if mapped == 0 {
		return ctx, fmt.Errorf("pod %s: its status maps no cpu from its claims: the cgroup would prove nothing", name)
	}
	path, got, toUnit, err := readPodCPUWeight(w.Cfg.NodeCgroupRoot, string(pod.UID))
	if err != nil {
		return ctx, err
	}
	want := toUnit(cpuShares(requested + mapped))
	if got != want {
		return ctx, fmt.Errorf("pod %s: %s is %d, expected %d for %dm requested plus %dm mapped by its claims (%d without the claims)",
			name, path, got, want, requested, mapped, toUnit(cpuShares(requested)))
	}
	return ctx, nil
}

func sameQuantities(a, b map[corev1.ResourceName]resource.Quantity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if r, ok := b[k]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

func sameOptional(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Cmp(*b) == 0
}

func formatMapped(m map[corev1.ResourceName]resource.Quantity) string {
	parts := make([]string, 0, len(m))
	for k, q := range m {
		parts = append(parts, fmt.Sprintf("%s=%s", k, q.String()))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

func formatResults(rs []resourceapi.DeviceRequestAllocationResult) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		var cc []string
		for k, q := range r.ConsumedCapacity {
			cc = append(cc, fmt.Sprintf("%s=%s", k, q.String()))
		}
		sort.Strings(cc)
		parts = append(parts, fmt.Sprintf("%s/%s consumed {%s}", r.Pool, r.Device, strings.Join(cc, ", ")))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}
