Feature: KEP-4815 partitionable devices: any GPU with enough memory, a partition or a whole GPU
  A prioritized list (firstAvailable) asks for a partition first and a whole GPU otherwise, both
  selected by a CEL expression on the memory capacity. The scheduler must take the first
  alternative that can be satisfied, and the container must see what was allocated.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4815 @core
  Scenario: A claim for at least 20G of memory prefers a 3g partition
    Given the driver publishes partitions with profile prefix "3g."
    And a ResourceClaim "roomy" requesting one device with at least "20G" of memory: a partition with profile prefix "3g." first, else a whole GPU
    When a pod "prefers-mig" is created with the claim "roomy"
    Then pod "prefers-mig" is running
    And the claim "roomy" is allocated from subrequest "partition"
    And the device allocated to the claim "roomy" has at least "20G" of memory
    And pod "prefers-mig" sees exactly the GPUs and MIG devices allocated to its claims through NVML

  @kep-4815 @core
  Scenario: A claim for more memory than any 3g partition has gets a whole GPU
    Given the driver publishes partitions with profile prefix "3g."
    And a ResourceClaim "huge" requesting one device with more memory than any partition with profile prefix "3g." has: such a partition first, else a whole GPU
    When a pod "falls-back" is created with the claim "huge"
    Then pod "falls-back" is running
    And the claim "huge" is allocated from subrequest "whole"
    And pod "falls-back" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "falls-back" has device nodes for exactly the GPUs allocated to its claims
