@needs-gate-DRANodeAllocatableResources
Feature: KEP-5517 node allocatable resources: the API server validates a device's nodeAllocatableResources
  A device may map its capacity onto the Node's allocatable cpu, memory and hugepages-<size>
  (devices[].nodeAllocatableResources, feature gate DRANodeAllocatableResources, alpha since 1.36
  and off by default in 1.37.2; dra-1.37-spec.md §13). Each entry needs a mapping
  (capacityKey with capacityMultiplier, or deviceMultiplier) or an overhead (perPod,
  perContainer). The API server rejects, with a 422 Invalid naming the field (kube-apiserver
  v1.37.2, pkg/apis/resource/validation validateNodeAllocatableResources): a key that is not a
  node allocatable resource name (an extended resource is not one), an entry with neither mapping
  nor overhead (Required), a capacityKey the device's capacity lacks (NotFound), a multiplier
  that is not positive, and a negative overhead. The map's key is part of the field path
  (nodeAllocatableResources[cpu]). With the gate off the API server drops the field without an
  error, so the kit also checks that a valid mapping is stored as sent. The slices are the kit's
  own, of its test driver, so these scenarios hold for every driver.

  @kep-5517 @extended @cluster-check
  Scenario Outline: The API server rejects a device whose nodeAllocatableResources <defect>
    When a ResourceSlice "nar" of the test driver with a device whose nodeAllocatableResources <defect> is submitted
    Then the API server rejects it as Invalid with cause <cause> at "<field>" saying "<message>"

    Examples:
      | defect                                | cause    | field                                                                       | message                                       |
      | map an extended resource              | Invalid  | spec.devices[0].nodeAllocatableResources[example.com/widgets]               | must be a node allocatable resource name      |
      | set neither mapping nor overhead      | Required | spec.devices[0].nodeAllocatableResources[cpu]                               | at least one of mapping or overhead must be set |
      | map a capacity key the device lacks   | NotFound | spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityKey           | cores                                         |
      | map with a zero capacity multiplier   | Invalid  | spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityMultiplier    | must be positive                              |
      | map with a negative device multiplier | Invalid  | spec.devices[0].nodeAllocatableResources[cpu].mapping.deviceMultiplier      | must be positive                              |
      | set a negative perPod overhead        | Invalid  | spec.devices[0].nodeAllocatableResources[memory].overhead.perPod            | must be non-negative                          |

  @kep-5517 @extended @cluster-check
  Scenario: The API server stores a device's nodeAllocatableResources as sent
    When a ResourceSlice "nar" of the test driver with a device whose nodeAllocatableResources map cpu and memory is submitted
    Then the API server accepts it
    And the ResourceSlice "nar" stores the nodeAllocatableResources of its device
