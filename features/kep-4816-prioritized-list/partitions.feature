Feature: KEP-4816 prioritized list: any device with enough memory, a partition or a whole device
  A prioritized list (firstAvailable) asks for a partition first and a whole device otherwise, both
  selected by a CEL expression on the memory capacity. The scheduler must take the first
  alternative that can be satisfied, and the container must see what was allocated. "half"
  partitions are a profile of which exactly two fit one device together. These scenarios need
  partitionable devices (KEP-4815), a capability the driver may leave unclaimed: they are Extended.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes partitionable devices

  @kep-4816 @extended
  Scenario: A claim for at least the memory of a "half" partition prefers such a partition
    Given the driver publishes "half" partitions with a memory capacity
    And a ResourceClaim "roomy" requesting one device with at least the memory of a "half" partition: such a partition first, else a whole device
    When a pod "prefers-partition" is created with the claim "roomy"
    Then pod "prefers-partition" is running
    And the claim "roomy" is allocated from subrequest "partition"
    And the device allocated to the claim "roomy" has at least the memory of a "half" partition
    And pod "prefers-partition" sees exactly the devices allocated to its claims

  @kep-4816 @extended
  Scenario: A claim for more memory than any "half" partition has gets a whole device
    Given the driver publishes "half" partitions with a memory capacity
    And a ResourceClaim "huge" requesting one device with more memory than any "half" partition has: such a partition first, else a whole device
    When a pod "falls-back" is created with the claim "huge"
    Then pod "falls-back" is running
    And the claim "huge" is allocated from subrequest "whole"
    And pod "falls-back" sees exactly the devices allocated to its claims
