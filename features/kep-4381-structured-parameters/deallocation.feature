Feature: KEP-4381 structured parameters: deleting a pod releases its devices
  When a pod goes away, the resourceclaim controller removes it from status.reservedFor,
  deallocates claims nobody reserves and deletes the claims generated for the pod; the kubelet
  has the driver unprepare the devices, which removes the claim's CDI spec. The devices can then
  be allocated again.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core
  Scenario: Deleting a pod deletes its generated claim and the next pod gets the same device
    Given a ResourceClaimTemplate "pinned" requesting 1 device pinned by its identity attribute
    When a pod "first" is created with a claim "dev" from template "pinned"
    Then pod "first" is running
    And pod "first" sees exactly the devices allocated to its claims
    When pod "first" is deleted
    Then the claim "dev" of pod "first" is deleted
    When a pod "second" is created with a claim "dev" from template "pinned"
    Then pod "second" is running
    And pod "second" sees exactly the devices allocated to its claims
    And pod "second" sees the same devices as pod "first"

  @kep-4381 @core
  Scenario: Deleting the only pod that uses a ResourceClaim deallocates the claim
    Given a ResourceClaim "kept" requesting 1 device
    When a pod "user" is created with the claim "kept"
    Then pod "user" is running
    And the claim "kept" is allocated 1 device
    When pod "user" is deleted
    Then the claim "kept" is deallocated and reserved for no pod
