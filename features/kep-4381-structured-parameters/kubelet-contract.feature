Feature: KEP-4381 structured parameters: the kubelet's contract with the driver
  The kubelet calls the driver's NodePrepareResources before a pod with claims starts and
  NodeUnprepareResources once no pod on the node uses a claim; both must be idempotent, since the
  kubelet repeats a prepare it did not see succeed and may unprepare a claim that is not prepared,
  and every claim of a call gets its own answer (DRA spec §17.2). drakit interpose sits between
  the kubelet and the driver (--interpose): it records what the kubelet asked and the driver
  answered, makes the kubelet see a call fail after the driver did its work, and calls the driver
  directly. Each scenario arms faults for the kubelet's next call, so it runs alone.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device
    And the driver is behind the kit's interposer

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A repeated prepare of a prepared claim returns the same CDI devices
    Given a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    And the driver prepares the claim "gpu" again with the same CDI devices
    And pod "user" sees exactly the devices allocated to its claims

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A repeated unprepare succeeds, and so does the unprepare of a claim never prepared
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    When pod "user" is deleted
    Then the kubelet's NodeUnprepareResources of the claim "gpu" reached the driver and succeeded
    And the node's CDI directory has no spec for the claim "gpu" of pod "user"
    And the driver unprepares the claim "gpu" again, successfully
    And the driver unprepares a claim it never prepared, successfully

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A prepare the kubelet sees fail after the driver prepared is retried with the same devices
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    And the interposer fails the kubelet's next NodePrepareResources with Unavailable after the driver answered
    When a pod "retried" is created with the claim "gpu"
    Then pod "retried" is running
    And the kubelet's NodePrepareResources of the claim "gpu" failed once after the driver prepared it, and the retry got the same CDI devices
    And pod "retried" sees exactly the devices allocated to its claims
    And each CDI device of the claim "gpu" is defined once on the node

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A prepare whose connection drops after the driver prepared is retried with the same devices
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    And the interposer drops the kubelet's connection in its next NodePrepareResources after the driver answered
    When a pod "dropped" is created with the claim "gpu"
    Then pod "dropped" is running
    And the kubelet's NodePrepareResources of the claim "gpu" failed once after the driver prepared it, and the retry got the same CDI devices
    And pod "dropped" sees exactly the devices allocated to its claims
    And each CDI device of the claim "gpu" is defined once on the node

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A prepare the kubelet abandons on its timeout leaves the claim prepared once after the retry
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    And the interposer holds the kubelet's next NodePrepareResources past the kubelet's timeout after the driver answered
    When a pod "patient" is created with the claim "gpu"
    Then pod "patient" is running
    And the kubelet's NodePrepareResources of the claim "gpu" failed once after the driver prepared it, and the retry got the same CDI devices
    And pod "patient" sees exactly the devices allocated to its claims
    And each CDI device of the claim "gpu" is defined once on the node

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: An unprepare the kubelet sees fail after the driver unprepared is retried and succeeds
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "user" is created with the claim "gpu"
    Then pod "user" is running
    Given the interposer fails the kubelet's next NodeUnprepareResources with Unavailable after the driver answered
    When pod "user" is deleted
    Then the kubelet's NodeUnprepareResources of the claim "gpu" failed once after the driver unprepared it, and the retry succeeded
    And the node's CDI directory has no spec for the claim "gpu" of pod "user"

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: A driver restart between prepare and unprepare loses nothing
    Given the kit can read the node's CDI directory
    And a ResourceClaim "gpu" requesting 1 device
    When a pod "survivor" is created with the claim "gpu"
    Then pod "survivor" is running
    And the node's CDI directory has a spec for the claim "gpu" of pod "survivor"
    When the driver's pods are restarted
    Then the driver prepares the claim "gpu" again with the same CDI devices
    When pod "survivor" is deleted
    Then the kubelet's NodeUnprepareResources of the claim "gpu" reached the driver and succeeded
    And the node's CDI directory has no spec for the claim "gpu" of pod "survivor"

  @kep-4381 @extended @kubelet-contract @interpose
  Scenario: Per-claim errors are reported per claim
    Given a ResourceClaim "good" requesting 1 device
    And a ResourceClaim "bad" requesting 1 device
    And the interposer answers the kubelet's next NodePrepareResources with an error for the claim "bad"
    When a pod "pair" is created with the claims "good" and "bad"
    Then pod "pair" is running
    And the kubelet got the error for the claim "bad" alone, and its retry prepared it
    And pod "pair" sees exactly the devices allocated to its claims
    And the driver answers a prepare of the claim "good" together with a claim that does not exist without preparing the missing one
