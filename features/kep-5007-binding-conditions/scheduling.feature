@needs-gate-DRAOptionalNodeOperations
Feature: KEP-5007 device binding conditions: the scheduler binds a pod only once its device is attached
  A device with bindingConditions is allocated like any other: the scheduler copies both lists into
  the allocation result and stamps the allocation with allocationTimestamp. Then it waits in PreBind
  (event BindingConditionsPending) and leaves the pod without a node until every binding condition
  of the device is True in the claim's status.devices; a True binding failure condition makes it
  give up ("device binding failed"), clear the allocation and retry the pod; so does a device whose
  conditions are not all True within the scheduler's bindingTimeout ("device binding timeout"; 600 s
  by default, 30 s in drakit's local and kind clusters; the kit waits --scheduler-binding-timeout,
  default 600 s, and --pod-start-timeout more) (dra-1.37-spec.md §9, behaviours 3 to 5). The
  conditions come from a controller that attaches the device: here the
  kit's own attach controller, which writes them through the API. The test driver has no kubelet
  plugin, so its devices also skip every node operation (KEP-5945) for the pod to run once bound.

  Background:
    Given the API server keeps the ResourceSlice field "skipNodeOperations"

  @kep-5007 @extended @cluster-check
  Scenario: The pod stays unbound until the attach controller reports the device attached
    Given the test driver publishes device "fabric" on a node with bindingConditions ["attached"] and bindingFailureConditions ["attach-failed"], skipping node operations ["*"]
    And a ResourceClaim "fabric" requesting the test driver's device "fabric"
    When a pod "user" is created with the claim "fabric"
    Then the claim "fabric" is allocated the test driver's device "fabric" with bindingConditions ["attached"], bindingFailureConditions ["attach-failed"] and an allocationTimestamp
    And pod "user" stays unbound for 6 seconds while the scheduler waits for binding conditions
    When the kit's attach controller sets condition "attached" of the device of claim "fabric" to True
    Then pod "user" is running

  @kep-5007 @extended @cluster-check
  Scenario: Every binding condition must be True, not just one
    Given the test driver publishes device "fabric" on a node with bindingConditions ["attached", "configured"] and bindingFailureConditions ["attach-failed"], skipping node operations ["*"]
    And a ResourceClaim "fabric" requesting the test driver's device "fabric"
    When a pod "user" is created with the claim "fabric"
    Then the claim "fabric" is allocated the test driver's device "fabric" with bindingConditions ["attached", "configured"], bindingFailureConditions ["attach-failed"] and an allocationTimestamp
    When the kit's attach controller sets condition "attached" of the device of claim "fabric" to True
    And the kit's attach controller sets condition "configured" of the device of claim "fabric" to False
    Then pod "user" stays unbound for 6 seconds while the scheduler waits for binding conditions
    When the kit's attach controller sets condition "configured" of the device of claim "fabric" to True
    Then pod "user" is running

  @kep-5007 @extended @cluster-check
  Scenario: A binding failure condition clears the allocation and the scheduler tries again
    Given the test driver publishes device "fabric" on a node with bindingConditions ["attached"] and bindingFailureConditions ["attach-failed"], skipping node operations ["*"]
    And a ResourceClaim "fabric" requesting the test driver's device "fabric"
    When a pod "user" is created with the claim "fabric"
    Then pod "user" stays unbound for 2 seconds while the scheduler waits for binding conditions
    When the kit's attach controller sets condition "attach-failed" of the device of claim "fabric" to True
    Then the claim "fabric" loses its allocation
    And the scheduler reports for pod "user" "device binding failed"
    And the claim "fabric" is allocated the test driver's device "fabric" with bindingConditions ["attached"], bindingFailureConditions ["attach-failed"] and an allocationTimestamp
    When the kit's attach controller sets condition "attached" of the device of claim "fabric" to True
    Then pod "user" is running

  @kep-5007 @extended @cluster-check
  Scenario: A device that is never attached times out and the scheduler tries again
    Given the test driver publishes device "fabric" on a node with bindingConditions ["attached"] and bindingFailureConditions ["attach-failed"], skipping node operations ["*"]
    And a ResourceClaim "fabric" requesting the test driver's device "fabric"
    When a pod "user" is created with the claim "fabric"
    Then pod "user" stays unbound for 2 seconds while the scheduler waits for binding conditions
    And the claim "fabric" loses its allocation
    And the scheduler reports for pod "user" "device binding timeout"

  @kep-5007 @extended @cluster-check
  Scenario: A device that binds to the node restricts its allocation to the pod's node
    Given the test driver publishes device "network" for all nodes, binding to the node, with bindingConditions ["attached"] and bindingFailureConditions ["attach-failed"], skipping node operations ["*"]
    And a ResourceClaim "network" requesting the test driver's device "network"
    When a pod "user" is created with the claim "network"
    Then the claim "network" is allocated the test driver's device "network" with bindingConditions ["attached"], bindingFailureConditions ["attach-failed"] and an allocationTimestamp
    When the kit's attach controller sets condition "attached" of the device of claim "network" to True
    Then pod "user" is running
    And the allocation of the claim "network" is restricted to the node of pod "user"
