Feature: KEP-4815 partitionable devices: the driver's counter consumptions fit its counter sets
  A device that consumes a counter set or a counter its pool does not declare makes the whole pool
  invalid, and one that consumes more than its set holds can never be allocated. The lint rule
  "counters" (conformance/lint) names the pool, slice and device of each.

  Background:
    Given the driver publishes partitionable devices

  @kep-4815 @core @slices
  Scenario: Every counter a device consumes is in its pool's counter sets, within what they hold
    Then the driver's ResourceSlices pass the lint rule "counters"
