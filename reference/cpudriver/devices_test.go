package cpudriver

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/reference/pluginharness"
)

var testNUMA = []numaNode{
	{ID: 0, CPUs: []int{0, 1, 2, 3}, CPUList: "0-3", MemoryBytes: 8 << 30},
	{ID: 1, CPUs: []int{4, 5, 6, 7}, CPUList: "4-7", MemoryBytes: 8 << 30},
}

func TestSliceDeviceMapsCapacityOntoNodeAllocatable(t *testing.T) {
	res := buildResources("node-a", testNUMA)
	devs := res.Pools["node-a"].Slices[0].Devices
	if len(devs) != 2 || devs[0].Name != "numa-0" || devs[1].Name != "numa-1" {
		t.Fatalf("devices = %v, want numa-0 and numa-1", devs)
	}
	d := devs[1]
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		t.Error("numa-1 does not allow multiple allocations")
	}
	if got := d.Capacity[capacityCPU].Value; got.Value() != 4 {
		t.Errorf("capacity cpu = %s, want 4", got.String())
	}
	if got := d.Capacity[capacityMemory].Value; got.Value() != 8<<30 {
		t.Errorf("capacity memory = %s, want 8Gi", got.String())
	}
	if *d.Attributes[attributeNUMANode].IntValue != 1 || *d.Attributes[attributeCPUList].StringValue != "4-7" {
		t.Errorf("attributes = %v", d.Attributes)
	}
	for _, r := range []string{"cpu", "memory"} {
		m := d.NodeAllocatableResources[corev1.ResourceName(r)].Mapping
		if m == nil || m.CapacityKey == nil || string(*m.CapacityKey) != r || m.CapacityMultiplier == nil || m.CapacityMultiplier.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("nodeAllocatableResources[%s] = %+v, want mapping {capacityKey %s, capacityMultiplier 1}", r, d.NodeAllocatableResources[corev1.ResourceName(r)], r)
		}
	}
}

func TestEditsSumTheClaimsSharesPerNUMANode(t *testing.T) {
	n := newNode("node-a", testNUMA)
	claim := preparedClaim{Devices: []pluginharness.PreparedDevice{
		{Request: "a", Device: "numa-1", ShareID: "s1", ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{capacityCPU: resource.MustParse("2"), capacityMemory: resource.MustParse("256Mi")}},
		{Request: "b", Device: "numa-0", ShareID: "s2", ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{capacityCPU: resource.MustParse("1"), capacityMemory: resource.MustParse("0")}},
		{Request: "c", Device: "numa-1", ShareID: "s3", ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{capacityCPU: resource.MustParse("1"), capacityMemory: resource.MustParse("1Mi")}},
	}}
	e, err := n.Edits(context.Background(), "uid", claim)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Devices) != 2 || e.Devices[0].Device != "numa-1" || e.Devices[1].Device != "numa-0" {
		t.Fatalf("edits = %+v, want numa-1 then numa-0", e.Devices)
	}
	want1 := []string{"DRAKIT_CPU_NUMA_1_CPUSET=4-7", "DRAKIT_CPU_NUMA_1_CPUS=3", "DRAKIT_CPU_NUMA_1_MEMORY=269484032"}
	if !slices.Equal(e.Devices[0].Edits.Env, want1) {
		t.Errorf("numa-1 env = %v, want %v", e.Devices[0].Edits.Env, want1)
	}
	want0 := []string{"DRAKIT_CPU_NUMA_0_CPUSET=0-3", "DRAKIT_CPU_NUMA_0_CPUS=1", "DRAKIT_CPU_NUMA_0_MEMORY=0"}
	if !slices.Equal(e.Devices[1].Edits.Env, want0) {
		t.Errorf("numa-0 env = %v, want %v", e.Devices[1].Edits.Env, want0)
	}
	if _, err := n.Edits(context.Background(), "uid", preparedClaim{Devices: []pluginharness.PreparedDevice{{Device: "numa-7"}}}); err == nil {
		t.Error("edits of an unknown device succeeded")
	}
	if err := n.Admit("numa-0", true); err == nil {
		t.Error("admin access was admitted")
	}
}
