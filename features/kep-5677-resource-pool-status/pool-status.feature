@needs-api-v1alpha3.resource.k8s.io @needs-gate-DRAResourcePoolStatus
Feature: KEP-5677 resource pool status: a ResourcePoolStatusRequest reports what a driver's pools hold
  A ResourcePoolStatusRequest (resource.k8s.io/v1alpha3, cluster-scoped, gate DRAResourcePoolStatus
  in the API server and kube-controller-manager) names a driver, optionally a pool and a limit
  (1..1000, default 100). The resourcepoolstatusrequest controller fills its status once, with
  condition Complete (reason CalculationComplete): poolCount, the count of matching pools before
  truncation, and the first limit pools sorted by driver and pool name, each with the newest
  generation, its slice count, total, allocated, unavailable (tainted NoSchedule/NoExecute) and
  available devices (total - allocated - unavailable), the node when all its slices share one, a
  partitionSummary when a partition type attribute is known (the slice's or the request's default)
  and a shareableSummary when a device allows multiple allocations. The spec never changes; once
  the status is set, neither does the status (dra-1.37-spec.md §14). Every answer is checked
  against what the kit computes from the ResourceSlices, ResourceClaims and DeviceTaintRules the
  API server stored, read before and after the controller answers (a request is asked again when
  they changed meanwhile). Where kube-controller-manager 1.37.2 differs from the spec, the code
  wins: a pool mid-rollout holds the whole request back instead of being listed with a
  validationError, and tainted devices count as unavailable even when allocated. A partition type
  groups devices that draw the same counters of the same counter set: partitions of the same
  profile on two GPUs, each GPU a counter set of one pool, make the pool's partition summary a
  validationError (PartitionCostMismatch) in 1.37.2.

  Background:
    Given the API server serves ResourcePoolStatusRequests

  @kep-5677 @extended @cluster-check
  Scenario Outline: The API server rejects a limit of <limit>
    When a ResourcePoolStatusRequest "bad-limit" for the driver with limit <limit> is submitted
    Then the API server rejects it as Invalid with cause Invalid at "spec.limit" saying "<message>"

    Examples:
      | limit | message                              |
      | 0     | must be greater than or equal to 1   |
      | 1001  | must be less than or equal to 1000   |

  @kep-5677 @extended @cluster-check
  Scenario: A request without a limit gets limit 100, one Complete status, and then neither its spec nor its status changes
    When a ResourcePoolStatusRequest "plain" for the driver without a limit is created
    Then the request "plain" stores limit 100
    And the request "plain" completes with condition Complete, reason CalculationComplete
    When the limit of the request "plain" is changed to 5
    Then the API server rejects it as Invalid with cause Invalid at "spec" saying "field is immutable"
    When the status of the request "plain" is rewritten with poolCount 99
    Then the API server rejects it as Invalid with cause Invalid at "status" saying "field is immutable"

  @kep-5677 @extended @cluster-check
  Scenario: The driver's pools are reported as the stored slices and claims say
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device
    Then a ResourcePoolStatusRequest for the driver reports every pool of the driver as the stored objects say

  @kep-5677 @extended
  Scenario: A device the kit allocates counts as allocated in a new request, and as free once deallocated
    Given the driver's DeviceClass exists
    And a ResourceClaim "gpu" requesting 1 device
    And a pod "user" is created with the claim "gpu"
    When pod "user" is running
    Then a ResourcePoolStatusRequest for the pool of the claim "gpu" reports only that pool, with the claim's device allocated, as the stored objects say
    When pod "user" is deleted
    And the claim "gpu" is deallocated and reserved for no pod
    Then a ResourcePoolStatusRequest for the pool of the claim "gpu" reports only that pool, without the claim's device allocated, as the stored objects say

  @kep-5677 @extended @cluster-check
  Scenario: A request for a driver without slices reports no pools
    Then a ResourcePoolStatusRequest for driver "no-such-driver.conformance.drakit.dev" reports no pools

  @kep-5677 @extended @cluster-check
  Scenario: Pools are sorted by name and cut at the limit; poolCount counts them all
    Given the test driver publishes pools "sort-c", "sort-a" and "sort-b" of one device each
    Then a ResourcePoolStatusRequest for the test driver with limit 2 lists the first 2 of the stored pools in order and counts them all

  @kep-5677 @extended @cluster-check
  Scenario: The poolName filter picks one pool, which names a node only when all its slices are on it
    Given the test driver publishes a pool "one-node" of two slices on node "node-a"
    And the test driver publishes a pool "two-nodes" of a slice on node "node-a" and one on node "node-b"
    Then a ResourcePoolStatusRequest for the test driver's pool "one-node" reports only that pool, on node "node-a"
    And a ResourcePoolStatusRequest for the test driver's pool "two-nodes" reports only that pool, on no node

  @kep-5677 @extended @cluster-check
  Scenario: A pool mid-rollout holds the request back until its newest generation is complete
    Given the test driver publishes a pool "rollout" of 2 devices at generation 1
    And the test driver publishes a pool "rollout" of 3 devices at generation 2 in the first of 2 slices
    When a ResourcePoolStatusRequest "mid" for the test driver's pool "rollout" is created
    Then the request "mid" stays without status for 5 seconds
    When the test driver publishes slice 2 of generation 2 of pool "rollout" with 1 device
    And the request "mid" is labelled, which queues it again
    Then the request "mid" reports only pool "rollout" at generation 2 with 2 slices and 4 devices, as the stored objects say

  @kep-5677 @extended @cluster-check @needs-gate-DRAPartitionableDevicesType
  Scenario: A partition summary needs a partition type attribute, and shrinks as partitions are allocated
    Given the API server keeps the ResourceSlice field "partitionTypeAttribute"
    And the test driver publishes a partitionable pool "typed" with 2 "half" and 4 "quarter" partitions of one counter set, naming its partition type attribute
    And the test driver publishes a partitionable pool "untyped" with 2 "half" and 4 "quarter" partitions of one counter set, not naming its partition type attribute
    Then a ResourcePoolStatusRequest for the test driver's pool "typed" reports partition types "half=2/2, quarter=4/4"
    And a ResourcePoolStatusRequest for the test driver's pool "untyped" reports partition types ""
    And a ResourcePoolStatusRequest for the test driver's pool "untyped" with the default partition type attribute reports partition types "half=2/2, quarter=4/4"
    When a ResourceClaim "half" requesting the test driver's device "typed-half-0"
    And a pod "half" is created with the claim "half"
    And pod "half" is scheduled
    Then a ResourcePoolStatusRequest for the test driver's pool "typed" reports partition types "half=2/1, quarter=4/2"

  @kep-5677 @extended @cluster-check
  Scenario: Only a pool with a device that allows multiple allocations has a shareable summary
    Given the test driver publishes a pool "shared" with a device that allows multiple allocations with capacity "bandwidth" of 10G and one that does not
    And the test driver publishes pools "plain-a", "plain-b" and "plain-c" of one device each
    Then a ResourcePoolStatusRequest for the test driver's pool "shared" reports 1 fully and 0 partially available shareable device with capacity "bandwidth" of 10G in total
    And a ResourcePoolStatusRequest for the test driver's pool "plain-a" reports no shareable summary

  @kep-5677 @extended @cluster-check @needs-gate-DRAPartitionableDevicesType
  Scenario: The driver's pools that name a partition type report the partition summary, or the validationError, the stored slices and claims give
    Given the driver claims the capability "partitionableDevicesType"
    And the API server keeps the ResourceSlice field "partitionTypeAttribute"
    And the driver publishes at least 1 device
    Then a ResourcePoolStatusRequest for the driver reports a partition summary for its pools that name a partition type attribute, as the stored objects say
