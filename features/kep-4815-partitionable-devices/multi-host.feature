Feature: KEP-4815 partitionable devices: slices that name each device's nodes
  With perDeviceNodeSelection a ResourceSlice leaves the node selection to its devices: each one sets
  exactly one of nodeName, nodeSelector and allNodes, so that one pool can hold devices that several
  nodes share (multi-host devices). A slice sets exactly one of nodeName, nodeSelector, allNodes and
  perDeviceNodeSelection; perDeviceNodeSelection and allNodes are unset or true; and without
  perDeviceNodeSelection a device may not name nodes of its own (dra-1.37-spec.md §1 item 10, §6 item
  4). The scheduler restricts an allocation to the nodes the allocated device names. The kit publishes
  these slices for a test driver of its own, so the checks do not depend on the driver under test;
  the fields belong to KEP-4815's gate DRAPartitionableDevices, so the scenarios are part of the
  partitionable profile, as the malformed pools are.

  Background:
    Given the driver claims the capability "partitionableDevices"

  @kep-4815 @core @multi-host @cluster-check
  Scenario Outline: The API server rejects a ResourceSlice whose node selection <selection>
    When a ResourceSlice "nodes" of the test driver whose node selection <selection> is submitted
    Then the API server rejects it as Invalid with cause <cause> at "<field>" saying "<message>"

    Examples:
      | selection                                                 | cause    | field                     | message                                                                                                                         |
      | names no node                                             | Required | spec                      | exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required                                     |
      | sets both allNodes and perDeviceNodeSelection             | Invalid  | spec                      | exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set        |
      | sets perDeviceNodeSelection to false                      | Invalid  | spec.perDeviceNodeSelection | must be either unset or set to true                                                                                           |
      | is per device but a device names no node                  | Required | spec.devices[0]           | exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec |
      | is per device but a device sets both nodeName and allNodes | Invalid | spec.devices[0]           | exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec |
      | is per device but a device sets allNodes to false         | Invalid  | spec.devices[0].allNodes  | must be either unset or set to true                                                                                             |
      | is per device but a device has an empty nodeName          | Invalid  | spec.devices[0].nodeName  | must not be empty                                                                                                               |
      | is allNodes and a device sets a nodeName                  | Invalid  | spec.devices[0]           | `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec |
      | is a nodeName and a device sets a nodeSelector            | Invalid  | spec.devices[0]           | `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec |

  @kep-4815 @core @multi-host @cluster-check
  Scenario: The API server stores a slice whose devices each name their nodes
    When a ResourceSlice "per-device" of the test driver with perDeviceNodeSelection and devices for a nodeName, a nodeSelector and allNodes is submitted
    Then the API server accepts it
    And the ResourceSlice "per-device" of the test driver keeps each device's node selection

  @kep-4815 @core @multi-host @cluster-check
  Scenario: A device that names its nodes by a node selector is allocated for those nodes
    Given the test driver publishes a pool "spread" with perDeviceNodeSelection: device "here" whose node selector picks a node of the cluster and device "nowhere" on a node that does not exist
    And a ResourceClaim "near" requesting the test driver's device "here"
    When a pod "user" is created with the claim "near"
    Then pod "user" is scheduled
    And the claim "near" is allocated the test driver's device "here" with the node selector the device names

  @kep-4815 @core @multi-host @cluster-check
  Scenario: A device that names a node the cluster does not have is never allocated
    Given the test driver publishes a pool "spread" with perDeviceNodeSelection: device "here" whose node selector picks a node of the cluster and device "nowhere" on a node that does not exist
    And a ResourceClaim "far" requesting the test driver's device "nowhere"
    When a pod "stuck" is created with the claim "far"
    Then pod "stuck" stays pending as unschedulable
    And the claim "far" is not allocated
