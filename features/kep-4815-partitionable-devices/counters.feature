Feature: KEP-4815 partitionable devices: shared counters make overlapping partitions unavailable
  Allocating a device subtracts what it consumes from its counter set; a device whose consumption
  would exceed what is left is not allocated, and deallocation gives the counters back
  (dra-1.37-spec.md §6, behavior 5). The whole device consumes everything, so it and any of its
  partitions exclude each other. Partitions are picked by what their counters allow, not by their
  names: "half" partitions are a profile of which exactly two fit one device together, "smallest"
  the profile of which the most fit (at least two).

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes partitionable devices

  @kep-4815 @core
  Scenario: Two "half" partitions fill a device; a third one for that device stays pending, one for any device goes elsewhere
    Given the driver publishes "half" partitions on at least 2 devices
    And a partitionable device "big" with "half" partitions
    And a ResourceClaim "left" requesting 1 "half" partition on device "big"
    And a ResourceClaim "right" requesting 1 "half" partition on device "big"
    When a pod "a" is created with the claim "left"
    And a pod "b" is created with the claim "right"
    Then pod "a" is running
    And pod "b" is running
    And the devices allocated to the claims "left" and "right" fit their counter sets together
    And pod "a" sees exactly the devices allocated to its claims
    And pod "b" sees exactly the devices allocated to its claims
    And pods "a" and "b" see different devices
    Given a ResourceClaim "third" requesting 1 "half" partition on device "big"
    And a ResourceClaim "anywhere" requesting 1 "half" partition
    When a pod "c" is created with the claim "third"
    And a pod "d" is created with the claim "anywhere"
    Then pod "c" stays pending as unschedulable
    And the claim "third" is not allocated
    And pod "d" is running
    And the claim "anywhere" is allocated a partition of a device other than "big"
    And pod "d" sees exactly the devices allocated to its claims

  @kep-4815 @core
  Scenario: The whole device is not allocatable while one of its partitions is, and is after the release
    Given the driver publishes "smallest" partitions
    And a partitionable device "dev" with "smallest" partitions
    And a ResourceClaim "part" requesting 1 "smallest" partition on device "dev"
    And a ResourceClaim "whole" requesting the whole device "dev"
    When a pod "small" is created with the claim "part"
    Then pod "small" is running
    When a pod "big" is created with the claim "whole"
    Then pod "big" stays pending as unschedulable
    And the claim "whole" is not allocated
    When pod "small" is deleted
    Then the claim "part" is deallocated and reserved for no pod
    And pod "big" is running
    And the claim "whole" is allocated 1 device
    And pod "big" sees exactly the devices allocated to its claims

  @kep-4815 @core
  Scenario: A claim for a whole device and one of its partitions overdraws the counter set and stays pending
    Given the driver publishes "smallest" partitions
    And a partitionable device "dev" with "smallest" partitions
    And a ResourceClaim "overdraw" requesting the whole device "dev" and 1 "smallest" partition on it
    When a pod "greedy" is created with the claim "overdraw"
    Then pod "greedy" stays pending as unschedulable
    And the claim "overdraw" is not allocated
