Feature: KEP-4381 structured parameters: a pod gets exactly the devices allocated to its claims
  The scheduler allocates devices from the driver's ResourceSlices; the driver must then make
  exactly those devices, and no others, usable in the pod's containers. "Sees exactly the devices
  allocated to its claims" holds every driver to the DRA contract: the driver prepared exactly the
  allocated devices (the kubelet's record of what NodePrepareResources returned), and the container
  shows exactly their CDI edits (environment, device nodes, mounts) and none of another device of
  the node. The observers the driver declares add device-kind ground truth: its per-device
  environment variables, and NVML and the NVIDIA device nodes inside the container.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core @smoke
  Scenario: A pod with a ResourceClaimTemplate for one device sees exactly that device
    Given a ResourceClaimTemplate "one" requesting 1 device
    When a pod "solo" is created with a claim "dev" from template "one"
    Then pod "solo" is running
    And the claim "dev" of pod "solo" is allocated 1 device
    And pod "solo" sees exactly the devices allocated to its claims

  @kep-4381 @core
  Scenario: A pod with a claim for two devices sees exactly both and none of another
    Given the driver publishes at least 2 devices
    And a ResourceClaim "two" requesting 2 devices
    When a pod "pair" is created with the claim "two"
    Then pod "pair" is running
    And the claim "two" is allocated 2 devices
    And pod "pair" sees exactly the devices allocated to its claims

  @kep-4381 @extended
  Scenario: A claim for two devices with a matchAttribute constraint gets two devices of one NUMA node
    Given the driver publishes 2 devices on one node with the same "resource.kubernetes.io/numaNode"
    And a ResourceClaim "pair" requesting 2 devices with the same "resource.kubernetes.io/numaNode"
    When a pod "numa" is created with the claim "pair"
    Then pod "numa" is running
    And the claim "pair" is allocated 2 devices
    And the devices allocated to the claim "pair" have the same "resource.kubernetes.io/numaNode"
    And pod "numa" sees exactly the devices allocated to its claims

  @kep-4381 @core @cluster-check
  Scenario: A claim for more devices than any node has leaves its pod unschedulable
    Given a ResourceClaim "too-many" requesting 1 more device than any node publishes
    When a pod "greedy" is created with the claim "too-many"
    Then pod "greedy" stays pending as unschedulable
    And the claim "too-many" is not allocated
