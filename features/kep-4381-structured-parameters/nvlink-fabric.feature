Feature: KEP-4381 structured parameters: GPUs of one multi-node NVLink clique and their IMEX channels
  A driver of NVLink-fabric nodes (GB200 NVL72-like racks) publishes on each GPU the clique it
  belongs to, and the IMEX channels of each clique as multi-node devices: a pool whose
  nodeSelector names the clique's nodes. A claim can ask for GPUs of one clique (matchAttribute
  on the declared clique attribute), and pods on several nodes of a clique can share one IMEX
  channel claim. The kit judges by ground truth: the clique NVML reports for every GPU the
  container sees (the emulated GPUs' fabric state), and the IMEX channel device nodes the
  container has, never the driver's attributes. The steps name no node.

  @kep-4381 @extended @nvlink-fabric
  Scenario: A claim for GPUs of one NVLink clique gets GPUs the container sees in one clique
    Given the driver declares an NVLink fabric
    And a ResourceClaim "clique" requesting 2 devices of one NVLink clique
    When a pod "fabric" is created with the claim "clique"
    Then pod "fabric" is running
    And the GPUs pod "fabric" sees are 2 GPUs of one NVLink clique

  @kep-4381 @extended @nvlink-fabric
  Scenario: A pod sees the IMEX channel allocated to it
    Given the driver declares IMEX channels
    And a ResourceClaim "channel" requesting an IMEX channel
    When a pod "imex" is created with the claim "channel"
    Then pod "imex" is running
    And the claim "channel" is allocated 1 device
    And pod "imex" sees exactly one IMEX channel

  @kep-4381 @extended @nvlink-fabric @multi-node
  Scenario: Pods on two nodes of one clique share an IMEX channel, a third pod does not fit
    Given the driver declares IMEX channels
    And the cluster has 2 nodes in one NVLink clique
    And a ResourceClaim "channel" requesting an IMEX channel
    And a ResourceClaim "gpus-a" requesting 4 devices of one NVLink clique
    And a ResourceClaim "gpus-b" requesting 4 devices of one NVLink clique
    And a ResourceClaim "gpus-c" requesting 4 devices of one NVLink clique
    When a pod "rank-a" is created with the claims "gpus-a" and "channel"
    And a pod "rank-b" is created with the claims "gpus-b" and "channel"
    Then pod "rank-a" is running
    And pod "rank-b" is running
    And the GPUs pod "rank-a" sees are 4 GPUs of one NVLink clique
    And the GPUs pod "rank-b" sees are 4 GPUs of one NVLink clique
    And pods "rank-a" and "rank-b" see GPUs of the same NVLink clique
    And pods "rank-a" and "rank-b" see the same IMEX channel
    When a pod "rank-c" is created with the claims "gpus-c" and "channel"
    Then pod "rank-c" stays pending as unschedulable
