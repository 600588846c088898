Feature: KEP-4815 partitionable devices: the API server and the scheduler reject malformed pools
  Counter sets live in slices of their own; a slice with both devices and sharedCounters is
  invalid. A pool whose device consumes from a counter set or a counter that none of its slices
  declares, or that declares a counter set twice, is invalid as a whole: the scheduler allocates
  nothing from it and says so (dra-1.37-spec.md §6, behaviors 1 and 6). The kit publishes these
  pools for a test driver of its own, so the checks do not depend on the driver under test; they
  are part of the partitionable profile, which a driver that does not claim partitionable devices
  leaves unclaimed.

  Background:
    Given the driver claims the capability "partitionableDevices"

  @kep-4815 @core @cluster-check
  Scenario: The API server rejects a ResourceSlice with both devices and sharedCounters
    When a ResourceSlice "mixed" of the test driver with both devices and sharedCounters is submitted
    Then the API server rejects it as Invalid with cause Invalid at "spec"

  @kep-4815 @core @cluster-check
  Scenario Outline: A pool in which <defect> is invalid
    Given the test driver publishes an invalid pool "broken": <defect>
    And a ResourceClaim "from-broken" requesting 1 device of the test driver
    When a pod "stuck" is created with the claim "from-broken"
    Then pod "stuck" stays pending as unschedulable because "invalid resource pools were encountered"
    And the claim "from-broken" is not allocated

    Examples:
      | defect                                               |
      | a device draws from a counter set no slice declares  |
      | a device draws a counter its counter set lacks       |
      | two slices declare the same counter set              |
