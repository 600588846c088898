@needs-gate-DRANodeAllocatableResources
Feature: KEP-5517 node allocatable resources: what a claim maps onto cpu counts against the node
  A driver whose devices map a capacity onto node allocatable cpu (nodeAllocatableResources[cpu]
  .mapping {capacityKey, capacityMultiplier}, capability nodeAllocatableResources) makes what a
  claim consumes of that capacity part of its pod's cpu request (dra-1.37-spec.md §13, behaviors 4
  and 6). kube-scheduler v1.37.2 (DynamicResources, nodeallocatabledynamicresources.go) computes,
  per claim, consumedCapacity[capacityKey] x capacityMultiplier summed over the claim's results
  (deviceMultiplier per device instead; the overheads summed per resource), writes it in PreBind
  into pod.status.nodeAllocatableResourceClaimStatuses (resourceClaimName: the ResourceClaim's own
  name; containers: those whose resources.claims name it; mapping sorted by name, with an entry
  also for a mapped capacity the claim consumes none of), and filters out a node whose allocatable
  cpu, less what the node's pods ask (including their statuses' mapped amounts: NodeResourcesFit
  and DynamicResources share the same accounting), cannot hold the pod's container requests plus
  its claims' amounts ("Insufficient cpu"). The kubelet v1.37.2 adds the mapped amounts to the pod
  cgroup's cpu request (pkg/kubelet/cm ResourceConfigForPod: cpu.shares on cgroup v1, cpu.weight
  on v2) — but only for a Burstable or Guaranteed pod: the QoS class comes from the containers'
  own requests and limits, so a pod whose only cpu comes from its claims is BestEffort and its
  pod cgroup gets the minimum 2 shares; and a container's cgroup gets the mapped amounts added
  to its limits only, never to its requests (kuberuntime getCPULimit/getMemoryLimit). A
  capacityKey mapping only counts through consumedCapacity, which 1.37.2 sets only on shares of
  devices with allowMultipleAllocations; on a whole device the scheduler fails the pod ("ConsumedCapacity
  is nil"), so the kit uses such a device. The scenarios that ask for the node's free cpu run
  alone: other scenarios' pods would change it under them.

  Background:
    Given the driver claims the capability "nodeAllocatableResources"
    And the driver publishes a device that maps a capacity onto node allocatable cpu

  @kep-5517 @extended
  Scenario: The scheduler writes what a claim maps onto node allocatable into the pod's status
    Given a ResourceClaim "cpus" consuming 1 of the capacity that maps onto cpu
    When a pod "worker" requesting cpu "100m" is created with the claim "cpus"
    Then pod "worker" is running
    And the status of pod "worker" maps the claim "cpus" onto node allocatable as its allocation and the driver's slice say

  @kep-5517 @extended @cluster-check
  Scenario: A pod whose claim takes it over the node's free cpu is unschedulable; without the claim it fits
    Given a ResourceClaim "extra" consuming 1 of the capacity that maps onto cpu
    When a pod "greedy" requesting the node's free cpu is created with the claim "extra"
    Then pod "greedy" stays pending as unschedulable with "Insufficient cpu"
    When a pod "fits" requesting the node's free cpu is created
    Then pod "fits" is running

  @kep-5517 @extended
  Scenario: The kubelet adds what a Burstable pod's claims map onto cpu to its pod cgroup
    Given a ResourceClaim "cpus" consuming 1 of the capacity that maps onto cpu
    When a pod "sized" requesting cpu "100m" is created with the claim "cpus"
    Then pod "sized" is running
    And the status of pod "sized" maps the claim "cpus" onto node allocatable as its allocation and the driver's slice say
    And the cgroup of pod "sized" on the node has the cpu shares of its cpu request plus what its claims map onto cpu
