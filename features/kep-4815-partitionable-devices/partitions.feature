Feature: KEP-4815 partitionable devices: a pod gets exactly the partition allocated to it
  A driver publishes each partitionable device as a family of devices that draw from one counter
  set: the whole device and every placement of every partition profile (MIG). The scheduler
  allocates a partition by its counters; the driver creates it on prepare and hands it to the
  container, and must destroy it on unprepare. Partitions are picked by what their counters allow:
  "smallest" is the profile of which the most fit one device together (at least two), "exclusive"
  a profile each of whose partitions excludes every other partition of its device (MIG's 7g).
  With the nvml observer the kit also compares NVML in the container (the MIG devices of each
  GPU, their profiles and memory) and its NVIDIA device nodes (the GPU, the MIG capability nodes
  numbered as /proc/driver/nvidia-caps/mig-minors) with what the API server stored.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes partitionable devices

  @kep-4815 @core
  Scenario: A claim for a "smallest" partition runs and the pod sees exactly that partition
    Given the driver publishes "smallest" partitions
    And a ResourceClaim "small" requesting 1 "smallest" partition
    When a pod "part" is created with the claim "small"
    Then pod "part" is running
    And the claim "small" is allocated 1 device
    And pod "part" sees exactly the devices allocated to its claims

  @kep-4815 @core
  Scenario: Two "smallest" partitions of one device in one claim are two partitions of that device
    Given the driver publishes "smallest" partitions
    And a partitionable device "dev" with "smallest" partitions
    And a ResourceClaim "pair" requesting 2 "smallest" partitions on device "dev"
    When a pod "two" is created with the claim "pair"
    Then pod "two" is running
    And the claim "pair" is allocated 2 devices
    And the claim "pair" is allocated partitions of device "dev"
    And pod "two" sees exactly the devices allocated to its claims

  @kep-4815 @extended
  Scenario: A partition prepared before the driver restarts is destroyed after it, leaving the device whole
    Given the driver publishes "exclusive" partitions
    And a partitionable device "dev" with "smallest" and "exclusive" partitions
    And a ResourceClaim "small" requesting 1 "smallest" partition on device "dev"
    And a ResourceClaim "all-of-it" requesting 1 "exclusive" partition on device "dev"
    When a pod "before" is created with the claim "small"
    Then pod "before" is running
    When the driver's pods are restarted
    Then the driver publishes at least 1 device
    When pod "before" is deleted
    Then the claim "small" is deallocated and reserved for no pod
    When a pod "after" is created with the claim "all-of-it"
    Then pod "after" is running
    And pod "after" sees exactly the devices allocated to its claims

  @kep-4815 @extended @emulator
  Scenario: A driver killed while it creates a partition leaves no partition behind after the kubelet's retry
    Given the kit can hold the node's NVML state lock
    And the driver publishes "exclusive" partitions
    And a partitionable device "dev" with "smallest" and "exclusive" partitions
    And a ResourceClaim "small" requesting 1 "smallest" partition on device "dev"
    And a ResourceClaim "all-of-it" requesting 1 "exclusive" partition on device "dev"
    When the node's NVML state lock is held
    And a pod "interrupted" is created with the claim "small"
    And the driver is killed while it changes the node's MIG devices for pod "interrupted"
    Then pod "interrupted" is running
    And the claim "small" is allocated 1 device
    And pod "interrupted" sees exactly the devices allocated to its claims
    When pod "interrupted" is deleted
    Then the claim "small" is deallocated and reserved for no pod
    When a pod "after" is created with the claim "all-of-it"
    Then pod "after" is running
    And pod "after" sees exactly the devices allocated to its claims
