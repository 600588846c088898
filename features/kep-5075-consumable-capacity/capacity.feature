Feature: KEP-5075 consumable capacity: claims share a device, each consuming part of its capacity
  A device with allowMultipleAllocations can be allocated to several claims at once, as long as
  what they consume of each capacity adds up to no more than the device has. Every allocation gets
  its own shareID and records what it consumes. The capacity's requestPolicy decides what a
  request consumes: its default when the request names no amount (the whole capacity without a
  policy), an amount rounded up to the range's minimum and step or to the next valid value, and
  no allocation at all above the range's maximum or every valid value. The driver declares which
  capacity its shared devices share (deviceKinds[].sharedCapacity); the kit reads the policy from
  the driver's ResourceSlices and computes what the API server must store.

  Background:
    Given the driver claims the capability "consumableCapacity"
    And the driver publishes a shared device

  @kep-5075 @core
  Scenario: Two claims share one device, each consuming its own share
    Given a ResourceClaim "share-a" requesting the smallest share of the shared device
    And a ResourceClaim "share-b" requesting the smallest share of the shared device
    When a pod "sharer-a" is created with the claim "share-a"
    And a pod "sharer-b" is created with the claim "share-b"
    Then pod "sharer-a" is running
    And pod "sharer-b" is running
    And the claims "share-a" and "share-b" share the shared device with distinct share IDs
    And the claim "share-a" consumes what the request policy makes of its amount
    And the claim "share-b" consumes what the request policy makes of its amount
    And pod "sharer-a" sees exactly the devices allocated to its claims
    And pod "sharer-b" sees exactly the devices allocated to its claims

  @kep-5075 @core
  Scenario: A claim for more than the device has left stays pending until capacity is given back
    Given a ResourceClaim "most" requesting the largest share of the shared device
    And a ResourceClaim "rest" requesting more of the shared device than the claim "most" leaves
    When a pod "big" is created with the claim "most"
    Then pod "big" is running
    And the claim "most" consumes what the request policy makes of its amount
    When a pod "late" is created with the claim "rest"
    Then pod "late" stays pending as unschedulable
    And the claim "rest" is not allocated
    When pod "big" is deleted
    Then pod "late" is running
    And the claim "rest" consumes what the request policy makes of its amount
    And pod "late" sees exactly the devices allocated to its claims

  @kep-5075 @core
  Scenario: A request without an amount consumes the policy's default
    Given a ResourceClaim "plain" requesting the shared device without an amount
    When a pod "defaulted" is created with the claim "plain"
    Then pod "defaulted" is running
    And the claim "plain" consumes what the request policy makes of its amount

  @kep-5075 @core
  Scenario: An amount between two valid amounts is rounded up to the next one
    Given a ResourceClaim "odd" requesting an amount of the shared device between two valid amounts
    When a pod "rounded" is created with the claim "odd"
    Then pod "rounded" is running
    And the claim "odd" consumes what the request policy makes of its amount

  @kep-5075 @core @cluster-check
  Scenario: An amount above what the request policy allows is never allocated
    Given a ResourceClaim "over" requesting more of the shared device than its request policy allows
    When a pod "greedy" is created with the claim "over"
    Then pod "greedy" stays pending as unschedulable
    And the claim "over" is not allocated

  @kep-5075 @core
  Scenario: A device without allowMultipleAllocations is never shared
    Given the devices of the driver's DeviceClass do not allow multiple allocations
    And a ResourceClaim "first" requesting 1 device
    When a pod "holder" is created with the claim "first"
    Then pod "holder" is running
    When a ResourceClaim "second" requesting the device allocated to the claim "first" is made
    When a pod "intruder" is created with the claim "second"
    Then pod "intruder" stays pending as unschedulable
    And the claim "second" is not allocated
