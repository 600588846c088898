@needs-gate-DRADeviceCompatibilityGroups
Feature: KEP-5963 device compatibility groups: devices of one counter set must share a group to be allocated together
  With the alpha gate DRADeviceCompatibilityGroups a counter consumption may name up to two
  compatibility groups. Devices drawing on the same counter set can be allocated together only
  when their groups intersect (dra-1.37-spec.md §6). The kit publishes a pool of its test driver
  whose counter set has room for all its devices, so only the groups can keep two of them apart;
  the test driver has no kubelet plugin, so its pods are only ever checked to be scheduled.
  Scenarios are skipped, with the reason, when the gate is off.

  Background:
    Given the driver claims the capability "deviceCompatibilityGroups"

  @kep-5963 @extended @cluster-check
  Scenario: Devices whose compatibility groups do not intersect are not allocated together
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the test driver publishes a pool "grouped" of devices "left" in compatibility group "a", "right" in group "b" and "both" in groups "a" and "b", with counters for all three
    And a ResourceClaim "apart" requesting the test driver's devices "left" and "right"
    When a pod "incompatible" is created with the claim "apart"
    Then pod "incompatible" stays pending as unschedulable
    And the claim "apart" is not allocated

  @kep-5963 @extended @cluster-check
  Scenario: Devices that share a compatibility group are allocated together
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the test driver publishes a pool "grouped" of devices "left" in compatibility group "a", "right" in group "b" and "both" in groups "a" and "b", with counters for all three
    And a ResourceClaim "together" requesting the test driver's devices "left" and "both"
    When a pod "compatible" is created with the claim "together"
    Then pod "compatible" is scheduled
    And the claim "together" is allocated the test driver's devices "left" and "both"

  @kep-5963 @extended
  Scenario: Two partitions of one device in the driver's compatibility groups run side by side
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the driver's DeviceClass exists
    And the driver publishes compatibility groups
    And the driver publishes "smallest" partitions
    And a partitionable device "dev" with "smallest" partitions
    And a ResourceClaim "first" requesting 1 "smallest" partition on device "dev"
    And a ResourceClaim "second" requesting 1 "smallest" partition on device "dev"
    When a pod "one" is created with the claim "first"
    And a pod "two" is created with the claim "second"
    Then pod "one" is running
    And pod "two" is running
    And pod "one" sees exactly the devices allocated to its claims
    And pod "two" sees exactly the devices allocated to its claims
    And pods "one" and "two" see different devices
    And the devices allocated to the claims "first" and "second" fit their counter sets together
