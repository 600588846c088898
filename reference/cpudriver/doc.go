// Package cpudriver is drakit's reference CPU and memory DRA driver
// (cpu.drakit.dev): a kubelet plugin that hands out shares of the node's
// NUMA nodes and maps them onto the Node's allocatable cpu and memory
// (KEP-5517, DRANodeAllocatableResources), so that what a claim consumes is
// counted by the scheduler against node allocatable and sized into the
// pod's cgroups by the kubelet.
//
// # Published resources
//
// The driver reads <HostRoot>/sys/devices/system/node/node<id>/cpulist and
// node<id>/meminfo (MemTotal) at start; a node without CPUs or without
// meminfo is left out, and no NUMA node at all stops the driver. One pool
// named after the node, in one ResourceSlice, with one device numa-<id> per
// NUMA node:
//
//	attributes  numaNode (int, the id), cpulist (string, the kernel's list)
//	capacity    cpu: the node's CPU count, requestPolicy default 1,
//	            validRange {min 1, step 1} (whole CPUs);
//	            memory: MemTotal in bytes, requestPolicy default 0,
//	            validRange {min 0, step 1Mi}
//	allowMultipleAllocations: true
//	nodeAllocatableResources:
//	            cpu:    mapping {capacityKey: cpu,    capacityMultiplier: 1}
//	            memory: mapping {capacityKey: memory, capacityMultiplier: 1}
//
// A claim asks for an amount with exactly.capacity.requests (cpu: "2",
// memory: 256Mi); the allocation result then carries a share ID and the
// consumed capacity, which the scheduler multiplies by the mapping's
// multiplier into pod.status.nodeAllocatableResourceClaimStatuses. The
// driver publishes the NUMA nodes as sysfs shows them: on drakit's emulated
// dgx-a100-mig node that is 128 CPUs and 512Gi per node, more than the real
// host's allocatable, which the scheduler still enforces on the sum.
//
// # Prepare and unprepare
//
// The kubelet plugin's plumbing is reference/pluginharness's (checkpoint in
// <StateDir>/checkpoint.json, version cpu.drakit.dev/checkpoint/v1; shares
// never conflict with each other; admin access is refused). Nothing is done
// on the node: the kubelet itself sizes the pod's cgroups from the pod
// status. PrepareResourceClaims writes one CDI spec per claim,
// k8s.<driver>-claim_<claimUID>.json, with one CDI device per NUMA node the
// claim has shares of, whose environment names the node, its CPUs and what
// the claim consumes of it:
//
//	DRAKIT_CPU_NUMA_<id>_CPUSET=<cpulist>
//	DRAKIT_CPU_NUMA_<id>_CPUS=<consumed cpu>
//	DRAKIT_CPU_NUMA_<id>_MEMORY=<consumed memory in bytes>
//
// The driver does not pin the container's cpuset: CDI container edits have
// no cpuset, and the CPU manager of the kubelet owns that.
package cpudriver
