@needs-gate-DRAOptionalNodeOperations
Feature: KEP-5945 optional node operations: which node operations a ResourceSlice may skip
  With the alpha gate DRAOptionalNodeOperations a ResourceSlice may list in skipNodeOperations
  the kubelet's calls to the driver's kubelet plugin that its devices do not need:
  NodePrepareResources, NodeUnprepareResources, or "*" for both (dra-1.37-spec.md §16). Skipping
  the prepare but not the unprepare is rejected: the kubelet would never learn at pod start that
  the plugin is missing and the pod would hang in Terminating. An unknown operation is rejected
  as not supported (kube-apiserver v1.37.2 validates the enum declaratively; the spec's "unknown
  values are ignored by the kubelet" concerns values a newer API server lets through).
  Scenarios are skipped, with the reason, when the gate is off.

  Background:
    Given the API server keeps the ResourceSlice field "skipNodeOperations"

  @kep-5945 @extended @cluster-check
  Scenario: Skipping NodePrepareResources without NodeUnprepareResources is rejected
    When a ResourceSlice "prepare-only" of the test driver with skipNodeOperations ["NodePrepareResources"] is submitted
    Then the API server rejects it as Invalid with cause Invalid at "spec.skipNodeOperations" saying "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"

  @kep-5945 @extended @cluster-check
  Scenario Outline: A ResourceSlice that skips <ops> is accepted
    When a ResourceSlice "skipping" of the test driver with skipNodeOperations <ops> is submitted
    Then the API server accepts it

    Examples:
      | ops                                               |
      | ["*"]                                             |
      | ["NodePrepareResources", "NodeUnprepareResources"] |
      | ["NodeUnprepareResources"]                        |
      | ["NodePrepareResources", "*"]                     |

  @kep-5945 @extended @cluster-check
  Scenario: An unknown node operation is rejected as not supported
    When a ResourceSlice "unknown-op" of the test driver with skipNodeOperations ["NodeResizeResources"] is submitted
    Then the API server rejects it as Invalid with cause NotSupported at "spec.skipNodeOperations[0]"
