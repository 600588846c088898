@needs-gate-DRAPartitionableDevicesType
Feature: Partitionable device types (KEP-4815, gate DRAPartitionableDevicesType): a slice names the attribute that tells partitions apart
  With the alpha gate DRAPartitionableDevicesType a ResourceSlice may set partitionTypeAttribute:
  the fully qualified name of a string attribute that every counter-consuming device of the slice
  carries (the partition profile, for MIG). The API server rejects the field on a slice without
  counter-consuming devices and a counter-consuming device without the attribute
  (dra-1.37-spec.md §6). Scenarios are skipped, with the reason, when the gate is off. The alpha
  sub-feature is tagged with its gate, @DRAPartitionableDevicesType: the conformance report counts
  it in the alpha profile, not with the beta partitionable devices of KEP-4815 (the spec doc files
  it under KEP-5677, whose tag @kep-5677 is the ResourcePoolStatusRequest's).

  Background:
    Given the driver claims the capability "partitionableDevicesType"

  @kep-4815 @DRAPartitionableDevicesType @extended @cluster-check
  Scenario: The API server rejects a partitionTypeAttribute on a slice without counter-consuming devices
    Given the API server keeps the ResourceSlice field "partitionTypeAttribute"
    When a ResourceSlice "typed-plain" of the test driver with a partitionTypeAttribute but no device that consumes counters is submitted
    Then the API server rejects it as Invalid with cause Invalid at "spec.partitionTypeAttribute"

  @kep-4815 @DRAPartitionableDevicesType @extended @cluster-check
  Scenario: The API server rejects a counter-consuming device without the partition type attribute
    Given the API server keeps the ResourceSlice field "partitionTypeAttribute"
    When a ResourceSlice "untyped" of the test driver whose counter-consuming device lacks the partitionTypeAttribute is submitted
    Then the API server rejects it as Invalid with cause Required at "spec.devices[0].attributes[test-driver.conformance.drakit.dev/partitionType]"

  @kep-4815 @DRAPartitionableDevicesType @extended
  Scenario: The driver's partitionable slices name a partition type every partition carries
    Given the API server keeps the ResourceSlice field "partitionTypeAttribute"
    And the driver's DeviceClass exists
    And the driver publishes at least 1 device
    Then every slice of the driver with counter-consuming devices names a partition type attribute that each of them has as a string
