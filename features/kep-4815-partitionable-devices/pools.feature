Feature: KEP-4815 partitionable devices: the API server and the scheduler reject malformed pools
  Counter sets live in slices of their own; a slice with both devices and sharedCounters is
  invalid. A pool whose device consumes from a counter set that none of its slices declares is
  invalid as a whole: the scheduler allocates nothing from it and says so (dra-1.37-spec.md §6,
  behaviors 1 and 6). The kit publishes these pools for a test driver of its own, so the checks do
  not depend on the driver under test.

  @kep-4815
  Scenario: The API server rejects a ResourceSlice with both devices and sharedCounters
    When a ResourceSlice "mixed" of the test driver with both devices and sharedCounters is submitted
    Then the API server rejects it as Invalid with cause Invalid at "spec"

  @kep-4815
  Scenario: A pool whose device consumes from a missing counter set is invalid
    Given the test driver publishes a pool "broken" whose device consumes from a counter set no slice of the pool declares
    And a ResourceClaim "from-broken" requesting 1 device of the test driver
    When a pod "stuck" is created with the claim "from-broken"
    Then pod "stuck" stays pending as unschedulable because "invalid resource pools were encountered"
    And the claim "from-broken" is not allocated
