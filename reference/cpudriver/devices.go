package cpudriver

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// Published names. The capacities are named like the node allocatable
// resources they map onto.
const (
	attributeNUMANode = "numaNode"
	attributeCPUList  = "cpulist"
	capacityCPU       = resourceapi.QualifiedName(corev1.ResourceCPU)
	capacityMemory    = resourceapi.QualifiedName(corev1.ResourceMemory)
	// memoryStep is the granularity of a memory share: 1Mi.
	memoryStep = 1 << 20
)

// deviceName is the device of NUMA node id: numa-<id>.
func deviceName(id int) string { return "numa-" + strconv.Itoa(id) }

// buildResources is the node's pool: one slice with one device per NUMA
// node (sliceDevice).
func buildResources(pool string, nodes []numaNode) resourceslice.DriverResources {
	devices := make([]resourceapi.Device, 0, len(nodes))
	for _, n := range nodes {
		devices = append(devices, sliceDevice(n))
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		pool: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}

// sliceDevice is NUMA node n as a device that many claims share
// (allowMultipleAllocations): capacity cpu (its CPUs, shares of whole CPUs,
// at least 1, 1 when the claim names no amount) and memory (its MemTotal,
// shares of whole MiB, 0 when the claim names no amount), each mapped 1:1
// onto the node allocatable resource of the same name, so that what a
// claim consumes counts against the Node's allocatable cpu and memory
// (KEP-5517).
func sliceDevice(n numaNode) resourceapi.Device {
	one := resource.MustParse("1")
	return resourceapi.Device{
		Name: deviceName(n.ID),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			attributeNUMANode: {IntValue: ptr.To(int64(n.ID))},
			attributeCPUList:  {StringValue: ptr.To(n.CPUList)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			capacityCPU: {
				Value: *resource.NewQuantity(int64(len(n.CPUs)), resource.DecimalSI),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default:    ptr.To(one.DeepCopy()),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(one.DeepCopy()), Step: ptr.To(one.DeepCopy())},
				},
			},
			capacityMemory: {
				Value: *resource.NewQuantity(n.MemoryBytes, resource.BinarySI),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default: resource.NewQuantity(0, resource.BinarySI),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{
						Min:  resource.NewQuantity(0, resource.BinarySI),
						Step: resource.NewQuantity(memoryStep, resource.BinarySI),
					},
				},
			},
		},
		AllowMultipleAllocations: ptr.To(true),
		NodeAllocatableResources: map[corev1.ResourceName]resourceapi.NodeAllocatableResource{
			corev1.ResourceCPU:    {Mapping: &resourceapi.NodeAllocatableMapping{CapacityKey: ptr.To(capacityCPU), CapacityMultiplier: ptr.To(one.DeepCopy())}},
			corev1.ResourceMemory: {Mapping: &resourceapi.NodeAllocatableMapping{CapacityKey: ptr.To(capacityMemory), CapacityMultiplier: ptr.To(one.DeepCopy())}},
		},
	}
}

// envPrefix is the prefix of a device's environment variables:
// DRAKIT_CPU_NUMA_<id>.
func envPrefix(id int) string { return fmt.Sprintf("DRAKIT_CPU_NUMA_%d", id) }
