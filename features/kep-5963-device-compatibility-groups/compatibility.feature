Feature: KEP-5963 device compatibility groups: devices of one counter set must share a group to be allocated together
  With the alpha gate DRADeviceCompatibilityGroups a counter consumption may name up to two
  compatibility groups. Devices drawing on the same counter set can be allocated together only
  when their groups intersect (dra-1.37-spec.md §6). The kit publishes a pool of its test driver
  whose counter set has room for all its devices, so only the groups can keep two of them apart;
  the test driver has no kubelet plugin, so its pods are only ever checked to be scheduled.
  Scenarios are skipped, with the reason, when the gate is off.

  @kep-5963 @core
  Scenario: Devices whose compatibility groups do not intersect are not allocated together
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the test driver publishes a pool "grouped" of devices "left" in compatibility group "a", "right" in group "b" and "both" in groups "a" and "b", with counters for all three
    And a ResourceClaim "apart" requesting the test driver's devices "left" and "right"
    When a pod "incompatible" is created with the claim "apart"
    Then pod "incompatible" stays pending as unschedulable
    And the claim "apart" is not allocated

  @kep-5963 @core
  Scenario: Devices that share a compatibility group are allocated together
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the test driver publishes a pool "grouped" of devices "left" in compatibility group "a", "right" in group "b" and "both" in groups "a" and "b", with counters for all three
    And a ResourceClaim "together" requesting the test driver's devices "left" and "both"
    When a pod "compatible" is created with the claim "together"
    Then pod "compatible" is scheduled
    And the claim "together" is allocated the test driver's devices "left" and "both"

  @kep-5963 @extended
  Scenario: Two partitions of one GPU in the driver's compatibility groups run side by side
    Given the API server keeps the ResourceSlice field "compatibilityGroups"
    And the driver's DeviceClass exists
    And the driver publishes compatibility groups
    And the driver publishes partitions with profile prefix "1g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "first" requesting 1 partition with profile prefix "1g." on GPU "gpu"
    And a ResourceClaim "second" requesting 1 partition with profile prefix "1g." on GPU "gpu"
    When a pod "one" is created with the claim "first"
    And a pod "two" is created with the claim "second"
    Then pod "one" is running
    And pod "two" is running
    And pods "one" and "two" see different MIG devices
    And the devices allocated to the claims "first" and "second" fit their counter sets together
