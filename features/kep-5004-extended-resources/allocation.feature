Feature: KEP-5004 extended resources: a pod asking for a DeviceClass's extended resource gets the driver's devices
  The kit creates a DeviceClass that selects the driver's devices as the driver's own DeviceClass
  does and names an extended resource of its own (conformance.drakit.dev/<class>), or none: then
  pods ask for the implicit deviceclass.resource.kubernetes.io/<class>. A pod whose container asks
  for such a resource in resources.limits, on nodes where no device plugin advertises it, is
  scheduled through DRA (dra-1.37-spec.md §8): kube-scheduler v1.37.2 creates ONE ResourceClaim for
  the pod, generateName <pod>-extended-resources-, with a controller ownerReference to the pod,
  the annotation resource.kubernetes.io/extended-resource-claim: "true", and per container and
  resource an ExactCount request container-<i>-request-<j> for the quantity (i counting init
  containers first, j the resource's index in the container's sorted requests), allocated and
  reserved for the pod; pod.status.extendedResourceClaimStatus names the claim and maps the
  container's resource to its request. The kubelet prepares that claim like any other: the
  container sees exactly its devices. The claim goes with the pod: the garbage collector deletes it
  with the pod, the resourceclaim controller once the pod completed. A pod asking for more devices
  than a node has, or than are free, stays unschedulable and gets no claim: extended resources
  backed by DRA are not overcommitted.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 2 devices
    And a DeviceClass "gpus" for the driver's devices with an extended resource name

  @kep-5004 @core
  Scenario: A pod asking for 2 of a DeviceClass's extended resource runs with 2 devices of the driver
    When a pod "app" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "app" is running
    And the scheduler created one claim for the extended resources of pod "app", allocated 2 devices
    And pod "app" sees exactly the 2 devices allocated for its extended resources

  @kep-5004 @core
  Scenario: A pod asking for the implicit extended resource of a DeviceClass without a name runs with its devices
    Given a DeviceClass "plain" for the driver's devices without an extended resource name
    When a pod "app" is created asking for 2 of the extended resource of DeviceClass "plain"
    Then pod "app" is running
    And the scheduler created one claim for the extended resources of pod "app", allocated 2 devices
    And pod "app" sees exactly the 2 devices allocated for its extended resources

  @kep-5004 @core
  Scenario: The claim for a pod's extended resources is deleted with the pod, and its devices are free again
    When a pod "app" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "app" is running
    When pod "app" is deleted
    Then the claim for the extended resources of pod "app" is deleted
    When a pod "next" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "next" is running
    And the scheduler created one claim for the extended resources of pod "next", allocated 2 devices

  @kep-5004 @core
  Scenario: The claim for a pod's extended resources is deleted once the pod completed
    When a pod "batch" that exits after its report is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "batch" completes
    And the claim for the extended resources of pod "batch" is deleted
    When a pod "next" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "next" is running
    And the scheduler created one claim for the extended resources of pod "next", allocated 2 devices

  @kep-5004 @core @cluster-check
  Scenario: A pod asking for more of an extended resource than one node has stays unschedulable
    When a pod "greedy" is created asking for 1 more of the extended resource of DeviceClass "gpus" than one node has
    Then pod "greedy" stays pending as unschedulable without a claim for its extended resources

  @kep-5004 @core
  Scenario: Devices another pod's extended resources hold are not given out again
    When a pod "first" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "first" is running
    When a pod "second" is created asking for 1 of the extended resource of DeviceClass "gpus"
    Then pod "second" stays pending as unschedulable without a claim for its extended resources
    When pod "first" is deleted
    Then pod "second" is running
    And the scheduler created one claim for the extended resources of pod "second", allocated 1 device
    And pod "second" sees exactly the 1 device allocated for its extended resources
