Feature: KEP-3695 the kubelet's PodResources API reports DRA claims
  The kubelet's podresources gRPC service (<kubelet root>/pod-resources/kubelet.sock,
  k8s.io/kubelet/pkg/apis/podresources/v1; GA with KubeletPodResourcesDynamicResources and
  KubeletPodResourcesGet) reports, in List and Get, each container's dynamic resources: per claim
  the container uses, its name and namespace and, per allocated device, the driver, pool, device,
  share ID and the CDI devices the driver prepared (DRA spec §16). Monitoring agents rely on it
  to attribute devices to pods. The kit compares the answer with the claim's allocation, the
  driver's NodePrepareResources answer (the kubelet's checkpoint) and the node's CDI specs; a
  pod without claims reports none, and a deleted pod goes from the answers. The API carries no
  request names: every device of a claim is reported to each container that uses the claim.

  Background:
    Given the kit can reach the kubelet's pod resources API
    And the driver publishes at least 1 device

  @kep-3695 @extended
  Scenario: List and Get report the claim's devices and CDI devices for the container that uses it
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    And the kubelet's pod resources List reports for pod "user" the devices and CDI devices of its claims
    And the kubelet's pod resources Get reports for pod "user" the devices and CDI devices of its claims
    And pod "user" sees exactly the devices allocated to its claims

  @kep-3695 @extended
  Scenario: Two claims of a pod are reported each with its own devices
    Given the kit can read the node's CDI directory
    And a ResourceClaim "first" requesting 1 device
    And a ResourceClaim "second" requesting 1 device
    When a pod "pair" is created with the claims "first" and "second"
    Then pod "pair" is running
    And the kubelet's pod resources List reports for pod "pair" the devices and CDI devices of its claims
    And the kubelet's pod resources Get reports for pod "pair" the devices and CDI devices of its claims

  @kep-3695 @extended @cluster-check
  Scenario: A pod without claims has no dynamic resources
    When a pod "plain" is created without claims
    Then pod "plain" is running
    And the kubelet's pod resources List and Get report no dynamic resources for pod "plain"

  @kep-3695 @extended
  Scenario: A deleted pod is no longer reported
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    And the kubelet's pod resources List reports for pod "user" the devices and CDI devices of its claims
    When pod "user" is deleted
    Then the kubelet's pod resources List and Get no longer report pod "user"
