@needs-gate-DRAOptionalNodeOperations
Feature: KEP-5945 optional node operations: the kubelet skips the calls a device does not need
  The scheduler copies a slice's skipNodeOperations into the allocation result of each of its
  devices, and places such a pod only on a node that declares the feature
  DRAOptionalNodeOperations in node.status.declaredFeatures. The kubelet skips the driver lookup
  and the NodePrepareResources call for a driver when every device of that driver in the claim
  skips it (dra-1.37-spec.md §16, §17.2). The test driver has no kubelet plugin on any node, so a
  pod with one of its devices starts only when preparing is skipped; otherwise the kubelet
  reports "DRA driver ... is not registered" (event FailedPrepareDynamicResources) and the pod
  stays Pending.

  Background:
    Given the API server keeps the ResourceSlice field "skipNodeOperations"

  @kep-5945 @extended @cluster-check
  Scenario: A pod with a device that skips every node operation runs without a kubelet plugin
    Given the test driver publishes device "virtual" on a node with skipNodeOperations ["*"]
    And a ResourceClaim "virtual" requesting the test driver's device "virtual"
    When a pod "user" is created with the claim "virtual"
    Then pod "user" is running
    And the claim "virtual" is allocated the test driver's device "virtual" with skipNodeOperations ["*"]
    And the node of pod "user" declares the feature "DRAOptionalNodeOperations"

  @kep-5945 @extended @cluster-check
  Scenario: A pod with a device that skips no node operation needs the driver's kubelet plugin
    Given the test driver publishes device "local" on a node
    And a ResourceClaim "local" requesting the test driver's device "local"
    When a pod "user" is created with the claim "local"
    Then pod "user" is scheduled but does not start because the kubelet reports "DRA driver test-driver.conformance.drakit.dev is not registered"
    And the claim "local" is allocated the test driver's device "local" with skipNodeOperations []

  @kep-5945 @extended @cluster-check
  Scenario: Skipping only NodeUnprepareResources still needs the kubelet plugin to prepare
    Given the test driver publishes device "unprepare-only" on a node with skipNodeOperations ["NodeUnprepareResources"]
    And a ResourceClaim "unprepare-only" requesting the test driver's device "unprepare-only"
    When a pod "user" is created with the claim "unprepare-only"
    Then pod "user" is scheduled but does not start because the kubelet reports "DRA driver test-driver.conformance.drakit.dev is not registered"
    And the claim "unprepare-only" is allocated the test driver's device "unprepare-only" with skipNodeOperations ["NodeUnprepareResources"]
