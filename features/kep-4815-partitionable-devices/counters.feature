Feature: KEP-4815 partitionable devices: shared counters make overlapping partitions unavailable
  Allocating a device subtracts what it consumes from its counter set; a device whose consumption
  would exceed what is left is not allocated, and deallocation gives the counters back
  (dra-1.37-spec.md §6, behavior 5). The whole GPU consumes everything, so it and any of its
  partitions exclude each other.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4815 @core
  Scenario: Two 3g partitions fill a GPU; a third one for that GPU stays pending, one for any GPU goes elsewhere
    Given the driver publishes partitions with profile prefix "3g." on at least 2 GPUs
    And a partitionable GPU "big" with partitions of profile prefix "3g."
    And a ResourceClaim "left" requesting 1 partition with profile prefix "3g." on GPU "big"
    And a ResourceClaim "right" requesting 1 partition with profile prefix "3g." on GPU "big"
    When a pod "a" is created with the claim "left"
    And a pod "b" is created with the claim "right"
    Then pod "a" is running
    And pod "b" is running
    And the devices allocated to the claims "left" and "right" fit their counter sets together
    And pods "a" and "b" see different MIG devices
    And pod "a" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "b" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    Given a ResourceClaim "third" requesting 1 partition with profile prefix "3g." on GPU "big"
    And a ResourceClaim "anywhere" requesting 1 partition with profile prefix "3g."
    When a pod "c" is created with the claim "third"
    And a pod "d" is created with the claim "anywhere"
    Then pod "c" stays pending as unschedulable
    And the claim "third" is not allocated
    And pod "d" is running
    And the claim "anywhere" is allocated a partition of a GPU other than "big"
    And pod "d" sees exactly the GPUs and MIG devices allocated to its claims through NVML

  @kep-4815 @core
  Scenario: The whole GPU is not allocatable while one of its partitions is, and is after the release
    Given the driver publishes partitions with profile prefix "1g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "part" requesting 1 partition with profile prefix "1g." on GPU "gpu"
    And a ResourceClaim "whole" requesting the whole GPU "gpu"
    When a pod "small" is created with the claim "part"
    Then pod "small" is running
    When a pod "big" is created with the claim "whole"
    Then pod "big" stays pending as unschedulable
    And the claim "whole" is not allocated
    When pod "small" is deleted
    Then the claim "part" is deallocated and reserved for no pod
    And pod "big" is running
    And the claim "whole" is allocated 1 device
    And pod "big" sees exactly the GPUs and MIG devices allocated to its claims through NVML

  @kep-4815 @core
  Scenario: A claim for a whole GPU and one of its partitions overdraws the counter set and stays pending
    Given the driver publishes partitions with profile prefix "1g."
    And a partitionable GPU "gpu" with partitions of profile prefix "1g."
    And a ResourceClaim "overdraw" requesting the whole GPU "gpu" and 1 partition with profile prefix "1g." on it
    When a pod "greedy" is created with the claim "overdraw"
    Then pod "greedy" stays pending as unschedulable
    And the claim "overdraw" is not allocated
