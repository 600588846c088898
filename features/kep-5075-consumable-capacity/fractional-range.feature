Feature: KEP-5075 consumable capacity: fractional request policy ranges
  With the beta gate DRAFractionalCapacityRange (on in 1.37) the API server checks a validRange in
  milli-units when any of min, max, step or default is fractional: max and default must be
  min plus a multiple of step. The scheduler rounds a request up to min + n·step the same way
  (dra-1.37-spec.md §7, behaviours 4 and 5). The kit publishes shared devices of its own test
  driver; the test driver has no kubelet plugin, so the pod is only checked to be scheduled.

  @kep-5075 @core @fractional-capacity-range @cluster-check
  Scenario: A fractional validRange is checked in milli-units and stored as submitted
    When a ResourceSlice "fractional" of the test driver is submitted with a shared device "link" whose capacity "bandwidth" of 4 has the validRange min 500m, step 1500m, max 3500m and default 2
    Then the API server accepts it
    And the ResourceSlice "fractional" stores the capacity "bandwidth" with the validRange min 500m, step 1500m, max 3500m and default 2

  @kep-5075 @core @fractional-capacity-range @cluster-check
  Scenario: A fractional default that is not min plus a multiple of the step is rejected
    When a ResourceSlice "fractional" of the test driver is submitted with a shared device "link" whose capacity "bandwidth" of 4 has the validRange min 500m, step 250m, max 2 and default 600m
    Then the API server rejects it as Invalid with cause Invalid at "spec.devices[0].capacity[test-driver.conformance.drakit.dev/bandwidth].requestPolicy.validRange.step" saying "value is not a multiple of a given step (250m) from (500m)"

  @kep-5075 @core @fractional-capacity-range @cluster-check
  Scenario: A request between two fractional steps consumes the next step up
    Given the test driver publishes a pool "links" with a shared device "link" whose capacity "bandwidth" of 4 has the validRange min 500m, step 250m, max 2 and default 500m
    And a ResourceClaim "odd" requesting 600m of the test driver's capacity "bandwidth"
    When a pod "rounded" is created with the claim "odd"
    Then pod "rounded" is scheduled
    And the claim "odd" consumes 750m of the test driver's capacity "bandwidth"
