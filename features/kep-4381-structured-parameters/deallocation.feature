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

  @kep-4381 @extended
  Scenario: Deleting a pod removes its claim's CDI spec from the node
    Given the kit can read the node's CDI directory
    And a ResourceClaimTemplate "one" requesting 1 device
    When a pod "cdi" is created with a claim "dev" from template "one"
    Then pod "cdi" is running
    And the node's CDI directory has a spec for the claim "dev" of pod "cdi"
    When pod "cdi" is deleted
    Then the node's CDI directory has no spec for the claim "dev" of pod "cdi"

  @kep-4381 @extended
  Scenario: A claim prepared before the driver restarts is unprepared after it
    Given the kit can read the node's CDI directory
    And a ResourceClaimTemplate "one" requesting 1 device
    When a pod "survivor" is created with a claim "dev" from template "one"
    Then pod "survivor" is running
    And the node's CDI directory has a spec for the claim "dev" of pod "survivor"
    When the driver's pods are restarted
    Then the driver publishes at least 1 device
    When pod "survivor" is deleted
    Then the claim "dev" of pod "survivor" is deleted
    And the node's CDI directory has no spec for the claim "dev" of pod "survivor"
