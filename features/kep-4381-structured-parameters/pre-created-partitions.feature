Feature: KEP-4381 structured parameters: a pre-created partition is a device like any other
  Partitions that exist before the driver starts (MIG devices of a static layout, as mig-parted
  leaves them) are published as plain devices of the driver's partition DeviceClass, each with its
  own identity, its parent's identity and no counters. A claim for one must give the container
  exactly that partition; with the nvml observer, NVML shows it under its GPU with the published
  identity, profile and memory, with its capability nodes.

  @kep-4381 @extended @pre-created
  Scenario: A claim for a pre-created partition gets exactly that partition
    Given the driver's DeviceClass exists
    And the driver publishes pre-created partitions
    And a device "static" with pre-created partitions
    And a ResourceClaim "fixed" requesting 1 pre-created partition of device "static"
    When a pod "pre" is created with the claim "fixed"
    Then pod "pre" is running
    And the claim "fixed" is allocated 1 device
    And pod "pre" sees exactly the devices allocated to its claims
