Feature: KEP-4381 structured parameters: a pod gets exactly the devices allocated to its claims
  The scheduler allocates devices from the driver's ResourceSlices; the driver must then make
  exactly those devices, and no others, usable in the pod's containers. The kit compares what
  the container sees (device nodes, NVML, environment, as reported by drakit-probe) with what the
  API server stored (the claim's allocation and the allocated devices' ResourceSlice entries).

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core
  Scenario: A pod gets exactly the CDI edits the driver prepared for the device allocated to it
    Given the kit can read what the kubelet prepared
    And a ResourceClaimTemplate "one" requesting 1 device
    When a pod "contract" is created with a claim "dev" from template "one"
    Then pod "contract" is running
    And the claim "dev" of pod "contract" is allocated 1 device
    And pod "contract" gets exactly the CDI edits the driver prepared for its claims

  @kep-4381 @core
  Scenario: A pod with a claim for two devices gets exactly the CDI edits of both, none of a third
    Given the kit can read what the kubelet prepared
    And a ResourceClaim "two" requesting 2 devices
    When a pod "pair" is created with the claim "two"
    Then pod "pair" is running
    And the claim "two" is allocated 2 devices
    And pod "pair" gets exactly the CDI edits the driver prepared for its claims

  @kep-4381 @extended
  Scenario: A pod with a ResourceClaimTemplate for one GPU sees exactly that GPU
    Given a ResourceClaimTemplate "one-gpu" requesting 1 device
    When a pod "solo" is created with a claim "gpu" from template "one-gpu"
    Then pod "solo" is running
    And the claim "gpu" of pod "solo" is allocated 1 device
    And pod "solo" sees exactly the GPUs allocated to its claims through NVML
    And pod "solo" has device nodes for exactly the GPUs allocated to its claims

  @kep-4381 @extended
  Scenario: A pod's environment names exactly the devices allocated to its claims
    Given the driver exports one environment variable per allocated device
    And a ResourceClaimTemplate "one-gpu" requesting 1 device
    When a pod "env" is created with a claim "gpu" from template "one-gpu"
    Then pod "env" is running
    And the claim "gpu" of pod "env" is allocated 1 device
    And pod "env" has an environment variable for exactly the devices allocated to its claims

  @kep-4381 @extended
  Scenario: A claim for two GPUs with a matchAttribute constraint gets two GPUs of one NUMA node
    Given the driver publishes 2 devices on one node with the same "resource.kubernetes.io/numaNode"
    And a ResourceClaim "pair" requesting 2 devices with the same "resource.kubernetes.io/numaNode"
    When a pod "numa" is created with the claim "pair"
    Then pod "numa" is running
    And the claim "pair" is allocated 2 devices
    And the devices allocated to the claim "pair" have the same "resource.kubernetes.io/numaNode"
    And pod "numa" sees exactly the GPUs allocated to its claims through NVML
    And pod "numa" has device nodes for exactly the GPUs allocated to its claims

  @kep-4381 @core
  Scenario: A claim for more GPUs than any node has leaves its pod unschedulable
    Given a ResourceClaim "too-many" requesting 1 more device than any node publishes
    When a pod "greedy" is created with the claim "too-many"
    Then pod "greedy" stays pending as unschedulable
    And the claim "too-many" is not allocated
