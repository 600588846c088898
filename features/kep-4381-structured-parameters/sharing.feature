Feature: KEP-4381 structured parameters: pods sharing a ResourceClaim
  A ResourceClaim referenced by several pods is allocated once and reserved for every pod that
  uses it (status.reservedFor has one entry per pod); all of them get the same devices.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core
  Scenario: Two pods sharing one ResourceClaim both run and see the same device
    Given a ResourceClaim "shared" requesting 1 device
    When a pod "user-a" is created with the claim "shared"
    And a pod "user-b" is created with the claim "shared"
    Then pod "user-a" is running
    And pod "user-b" is running
    And the claim "shared" is allocated 1 device
    And the claim "shared" is reserved for exactly pods "user-a" and "user-b"
    And pod "user-a" sees exactly the devices allocated to its claims
    And pod "user-b" sees exactly the devices allocated to its claims
    And pod "user-b" sees the same devices as pod "user-a"
