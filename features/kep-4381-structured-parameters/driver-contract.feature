Feature: KEP-4381 structured parameters: the driver's side of the kubelet's contract
  The kubelet calls the driver's NodePrepareResources before a pod with claims starts and
  NodeUnprepareResources once no pod on the node uses a claim (DRA spec §17.2). It removes a
  deleted pod only after that unprepare succeeded, and it keeps the claim prepared while the
  driver restarts. Unprepare frees the device for the next claim and removes the CDI devices the
  claim got, whatever the driver names its CDI spec files; both calls are idempotent. The @core
  scenarios judge from the API server and the containers; the @extended ones read the node: the
  kubelet's checkpoint, the CDI spec directory and the driver's DRA socket.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core @smoke
  Scenario: A claim is unprepared when its pod goes, and its device serves the next claim
    Given a ResourceClaim "first" requesting 1 device
    When a pod "user" is created with the claim "first"
    Then pod "user" is running
    And pod "user" sees exactly the devices allocated to its claims
    When pod "user" is deleted, which the kubelet completes once the driver unprepared its claims
    And the claim "first" is deleted
    And a ResourceClaim "next" requesting the device pod "user" had, by its identity attribute
    And a pod "successor" is created with the claim "next"
    Then pod "successor" is running
    And pod "successor" sees exactly the devices allocated to its claims
    And pod "successor" sees the same devices as pod "user"

  @kep-4381 @core
  Scenario: The driver restarts between prepare and unprepare: the pod runs on and its claim stays usable
    Given a ResourceClaim "held" requesting 1 device
    When a pod "survivor" is created with the claim "held"
    Then pod "survivor" is running
    And pod "survivor" sees exactly the devices allocated to its claims
    When the driver's pods are restarted
    Then pod "survivor" still runs, its containers never restarted
    When a pod "newcomer" is created with the claim "held"
    Then pod "newcomer" is running
    And pod "newcomer" sees exactly the devices allocated to its claims
    And pod "newcomer" sees the same devices as pod "survivor"
    When pod "survivor" is deleted
    And pod "newcomer" is deleted, which the kubelet completes once the driver unprepared its claims
    And the claim "held" is deleted
    And a ResourceClaim "next" requesting the device pod "survivor" had, by its identity attribute
    And a pod "successor" is created with the claim "next"
    Then pod "successor" is running
    And pod "successor" sees exactly the devices allocated to its claims

  @kep-4381 @extended
  Scenario: The CDI devices a claim got are gone from the node once its pod is, whatever their names
    Given the kit can read the node's CDI specs and the kubelet's DRA checkpoint
    And a ResourceClaim "first" requesting 1 device
    When a pod "user" is created with the claim "first"
    Then pod "user" is running
    And the node's CDI specs define the CDI devices the kubelet got for the claim "first"
    When pod "user" is deleted, which the kubelet completes once the driver unprepared its claims
    Then the node's CDI specs no longer define the CDI devices the claim "first" got

  @kep-4381 @extended
  Scenario: The driver restarts between prepare and unprepare: the claim's CDI devices stay until its pod goes
    Given the kit can read the node's CDI specs and the kubelet's DRA checkpoint
    And a ResourceClaim "held" requesting 1 device
    When a pod "survivor" is created with the claim "held"
    Then pod "survivor" is running
    And the node's CDI specs define the CDI devices the kubelet got for the claim "held"
    When the driver's pods are restarted
    Then the node's CDI specs define the CDI devices the kubelet got for the claim "held"
    When pod "survivor" is deleted, which the kubelet completes once the driver unprepared its claims
    Then the node's CDI specs no longer define the CDI devices the claim "held" got

  @kep-4381 @extended
  Scenario: Prepare and unprepare called again on the driver's socket are idempotent
    Given the kit can call the driver's DRA socket on the node
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    And a repeated NodePrepareResources of the claim "gpu" on the driver's socket returns the CDI devices the kubelet got
    When pod "user" is deleted, which the kubelet completes once the driver unprepared its claims
    And a ResourceClaim "next" requesting the device pod "user" had, by its identity attribute
    And a pod "successor" is created with the claim "next"
    Then pod "successor" is running
    And NodeUnprepareResources of the claim "gpu" on the driver's socket succeeds twice more
    And pod "successor" still runs, its containers never restarted
