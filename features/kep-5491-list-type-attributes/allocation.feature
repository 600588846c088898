@needs-gate-DRAListTypeAttributes
Feature: KEP-5491 list-type attributes: constraints and selectors treat lists as sets
  A matchAttribute constraint over a list attribute holds when the lists of all the chosen devices
  have an element in common, a distinctAttribute constraint when they are pairwise disjoint; a
  scalar counts as a list of one. The CEL function includes() tests membership in a list, and
  equality on a scalar (dra-1.37-spec.md §15, behaviours 3 and 4). The kit publishes pools of its
  test driver where only the set semantics single out the right devices; the test driver has no
  kubelet plugin, so the pods are only checked to be scheduled.

  Background:
    Given the API server keeps list-type device attributes

  @kep-5491 @extended @cluster-check
  Scenario: matchAttribute over lists takes devices whose lists share an element with all the others
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": anchor [1], left [0 1], right [1 2], apart [0 2]
    And a ResourceClaim "together" requesting the test driver's device "anchor" and 2 more with the same "numa"
    When a pod "aligned" is created with the claim "together"
    Then pod "aligned" is scheduled
    And the claim "together" is allocated exactly the test driver's devices "anchor", "left" and "right"

  @kep-5491 @extended @cluster-check
  Scenario: matchAttribute over lists does not allocate devices whose lists share nothing
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": anchor [1], far [2 3]
    And a ResourceClaim "together" requesting the test driver's device "anchor" and 1 more with the same "numa"
    When a pod "split" is created with the claim "together"
    Then pod "split" stays pending as unschedulable
    And the claim "together" is not allocated

  @kep-5491 @extended @cluster-check
  Scenario: distinctAttribute over lists takes devices whose lists are disjoint
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": anchor [0 1], overlap [1 2], disjoint [2 3]
    And a ResourceClaim "apart" requesting the test driver's device "anchor" and 1 more with a different "numa"
    When a pod "spread" is created with the claim "apart"
    Then pod "spread" is scheduled
    And the claim "apart" is allocated exactly the test driver's devices "anchor" and "disjoint"

  @kep-5491 @extended @cluster-check
  Scenario: A selector with includes() takes the device whose list holds the value
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": near [0 1], far [2 3]
    And a ResourceClaim "remote" requesting 1 device of the test driver whose "numa" includes 3
    When a pod "picky" is created with the claim "remote"
    Then pod "picky" is scheduled
    And the claim "remote" is allocated exactly the test driver's devices "far"

  @kep-5491 @extended @cluster-check
  Scenario: A selector with includes() on a scalar attribute compares the value
    Given the test driver publishes a pool "sockets" of devices with the int attribute "socket": zero 0, one 1
    And a ResourceClaim "second" requesting 1 device of the test driver whose "socket" includes 1
    When a pod "picky" is created with the claim "second"
    Then pod "picky" is scheduled
    And the claim "second" is allocated exactly the test driver's devices "one"
