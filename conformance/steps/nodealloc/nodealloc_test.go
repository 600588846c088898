package nodealloc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestExpectedNodeAllocFollowsConsumedCapacityAndMultipliers(t *testing.T) {
	devices := map[string]*resourceapi.Device{
		"numa-0": {NodeAllocatableResources: map[corev1.ResourceName]resourceapi.NodeAllocatableResource{
			corev1.ResourceCPU:    cpuMapping("cpu", "1"),
			corev1.ResourceMemory: {Mapping: &resourceapi.NodeAllocatableMapping{CapacityKey: ptr.To(resourceapi.QualifiedName("memory")), CapacityMultiplier: ptr.To(resource.MustParse("2"))}, Overhead: &resourceapi.NodeAllocatableOverhead{PerPod: ptr.To(resource.MustParse("16Mi"))}},
		}},
		"gpu-0": {NodeAllocatableResources: map[corev1.ResourceName]resourceapi.NodeAllocatableResource{
			corev1.ResourceCPU: {Mapping: &resourceapi.NodeAllocatableMapping{DeviceMultiplier: ptr.To(resource.MustParse("500m"))}},
		}},
	}
	results := []resourceapi.DeviceRequestAllocationResult{
		{Device: "numa-0", ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"cpu": resource.MustParse("2"), "memory": resource.MustParse("1Gi")}},
		{Device: "numa-0", ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"cpu": resource.MustParse("1")}},
		{Device: "gpu-0"},
	}
	mapped, overhead, err := expectedNodeAlloc(results, func(r resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error) {
		return devices[r.Device], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	if !sameQuantities(mapped, want) {
		t.Errorf("mapped = %s, want %s", formatMapped(mapped), formatMapped(want))
	}
	if o := overhead[corev1.ResourceMemory]; o.PerPod == nil || o.PerPod.Cmp(resource.MustParse("32Mi")) != 0 || o.PerContainer != nil {
		t.Errorf("memory overhead = %+v, want perPod 32Mi (two shares) and no perContainer", o)
	}
	if _, _, err := expectedNodeAlloc(results, func(resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error) {
		return nil, errors.New("gone")
	}); err == nil {
		t.Error("a device missing from the slices was not an error")
	}
}

func TestPodCPURequestMilliCountsTheClaimStatuses(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
				{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}},
			},
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}},
			Overhead:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
		},
		Status: corev1.PodStatus{NodeAllocatableResourceClaimStatuses: []corev1.NodeAllocatableResourceClaimStatus{{
			Containers: []string{"a", "b"},
			Mapping:    []corev1.NodeAllocatableMappedResources{{Name: corev1.ResourceCPU, Quantity: ptr.To(resource.MustParse("2"))}, {Name: corev1.ResourceMemory, Quantity: ptr.To(resource.MustParse("1Gi"))}},
			Overhead:   []corev1.NodeAllocatableOverheadResources{{Name: corev1.ResourceCPU, PerPod: ptr.To(resource.MustParse("5m")), PerContainer: ptr.To(resource.MustParse("1m"))}},
		}}},
	}
	if got, want := podCPURequestMilli(pod), int64(300+10+2000+5+2); got != want {
		t.Errorf("podCPURequestMilli = %d, want %d", got, want)
	}
}

func TestCPUShares(t *testing.T) {
	for milli, want := range map[int64]int64{0: 2, 1: 2, 100: 102, 1100: 1126, 2000: 2048} {
		if got := cpuShares(milli); got != want {
			t.Errorf("cpuShares(%d) = %d, want %d", milli, got, want)
		}
	}
}

func TestReadPodCPUWeightFindsThePodCgroup(t *testing.T) {
	uid := "0f1e2d3c-aaaa-bbbb-cccc-000000000001"
	v1 := t.TempDir()
	dir := filepath.Join(v1, "cpu", "drakit-kubelet", "kubepods", "burstable", "pod"+uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte("1126\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, got, toUnit, err := readPodCPUWeight(v1, uid)
	if err != nil || got != 1126 || path != filepath.Join(dir, "cpu.shares") || toUnit(1126) != 1126 {
		t.Errorf("cgroup v1: %s %d %v", path, got, err)
	}

	v2 := t.TempDir()
	dir = filepath.Join(v2, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod0f1e2d3c_aaaa_bbbb_cccc_000000000001.slice")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.weight"), []byte("43\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, got, toUnit, err = readPodCPUWeight(v2, uid)
	if err != nil || got != 43 || toUnit(1126) != 43 {
		t.Errorf("cgroup v2: %d (want 43), toUnit(1126) = %d, %v", got, toUnit(1126), err)
	}
	if _, _, _, err := readPodCPUWeight(v2, "other"); err == nil {
		t.Error("a pod without a cgroup was found")
	}

	// A kind node's pod, seen from the host: below the node container's
	// cgroup, the node's systemd slices.
	kind := t.TempDir()
	dir = filepath.Join(kind, "cpu", "docker", "3f9a0c", "kubelet.slice", "kubelet-kubepods.slice", "kubelet-kubepods-burstable.slice",
		"kubelet-kubepods-burstable-pod0f1e2d3c_aaaa_bbbb_cccc_000000000001.slice")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte("1126\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if path, got, _, err := readPodCPUWeight(kind, uid); err != nil || got != 1126 {
		t.Errorf("kind node's pod from the host: %s %d %v", path, got, err)
	}
}
