Feature: KEP-4815 partitionable devices: a pod gets exactly the GPU partition allocated to it
  A driver publishes each partitionable GPU as a family of devices that draw from one counter set:
  the whole GPU and every placement of every partition profile (MIG). The scheduler allocates a
  partition by its counters; the driver creates it on prepare and hands it to the container. The
  kit compares what the container sees through NVML (the MIG devices of each GPU, their profiles
  and memory) and its /dev nodes (the GPU and the MIG capability nodes, numbered as the NVIDIA
  driver numbers /proc/driver/nvidia-caps/mig-minors) with what the API server stored.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4815 @core
  Scenario: A claim for a 1g partition runs and the pod sees exactly that MIG device
    Given the driver publishes partitions with profile prefix "1g."
    And a ResourceClaim "small" requesting 1 partition with profile prefix "1g."
    When a pod "mig" is created with the claim "small"
    Then pod "mig" is running
    And the claim "small" is allocated 1 device
    And pod "mig" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "mig" has device nodes for exactly its GPUs and the capabilities of its MIG devices

  @kep-4815 @extended
  Scenario: The container's GPU and MIG capability nodes are the ones in the claim's CDI spec
    Given the kit can read the node's CDI directory
    And the driver publishes partitions with profile prefix "1g."
    And a ResourceClaim "small" requesting 1 partition with profile prefix "1g."
    When a pod "caps" is created with the claim "small"
    Then pod "caps" is running
    And the node's CDI directory has a spec for the claim "small" of pod "caps"
    And pod "caps" has exactly the NVIDIA device nodes of the CDI spec of the claim "small"
    And pod "caps" has device nodes for exactly its GPUs and the capabilities of its MIG devices

  @kep-4815 @core
  Scenario: Two 1g partitions of one GPU in one claim are two MIG devices of that GPU
    Given the driver publishes partitions with profile prefix "1g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "pair" requesting 2 partitions with profile prefix "1g." on GPU "gpu"
    When a pod "two" is created with the claim "pair"
    Then pod "two" is running
    And the claim "pair" is allocated 2 devices
    And the claim "pair" is allocated a partition of GPU "gpu"
    And pod "two" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "two" has device nodes for exactly its GPUs and the capabilities of its MIG devices

  @kep-4815 @extended
  Scenario: A partition prepared before the driver restarts is destroyed after it, leaving the GPU whole
    Given the driver publishes partitions with profile prefix "7g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "small" requesting 1 partition with profile prefix "1g." on GPU "gpu"
    And a ResourceClaim "all-slices" requesting 1 partition with profile prefix "7g." on GPU "gpu"
    When a pod "before" is created with the claim "small"
    Then pod "before" is running
    When the driver's pods are restarted
    Then the driver publishes at least 1 device
    When pod "before" is deleted
    Then the claim "small" is deallocated and reserved for no pod
    When a pod "after" is created with the claim "all-slices"
    Then pod "after" is running
    And pod "after" sees exactly the GPUs and MIG devices allocated to its claims through NVML

  @kep-4815 @extended @emulator
  Scenario: A driver killed while it creates a partition leaves no partition behind after the kubelet's retry
    Given the kit can hold the node's NVML state lock
    And the driver publishes partitions with profile prefix "7g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "small" requesting 1 partition with profile prefix "1g." on GPU "gpu"
    And a ResourceClaim "all-slices" requesting 1 partition with profile prefix "7g." on GPU "gpu"
    When the node's NVML state lock is held
    And a pod "interrupted" is created with the claim "small"
    And the driver is killed while it changes the node's MIG devices for pod "interrupted"
    Then pod "interrupted" is running
    And the claim "small" is allocated 1 device
    And pod "interrupted" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "interrupted" has device nodes for exactly its GPUs and the capabilities of its MIG devices
    When pod "interrupted" is deleted
    Then the claim "small" is deallocated and reserved for no pod
    When a pod "after" is created with the claim "all-slices"
    Then pod "after" is running
    And pod "after" sees exactly the GPUs and MIG devices allocated to its claims through NVML
