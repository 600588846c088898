@needs-gate-DRAListTypeAttributes
Feature: KEP-5491 list-type attributes: the API server validates list attributes of ResourceSlices
  With the alpha gate DRAListTypeAttributes a device attribute may be a list of ints, bools,
  strings or versions (dra-1.37-spec.md §15). A list must not be empty; each string or version in
  it is at most 64 characters, each version is semver; each element counts toward the 48 attribute
  values of a device; and one list attribute anywhere in a slice lowers its limit from 128 to 64
  devices. The kit submits slices of its own test driver and checks the cause's type and field
  path. Scenarios are skipped, with the reason, when the gate is off.

  Background:
    Given the API server keeps list-type device attributes

  @kep-5491 @extended @cluster-check
  Scenario Outline: The API server rejects a ResourceSlice with <defect>
    When a ResourceSlice "bad" of the test driver is submitted with <defect>
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                                             | cause   | field                                                                               |
      | an empty list attribute                            | Invalid | spec.devices[0].attributes[test-driver.conformance.drakit.dev/numa].ints            |
      | a list attribute with a string of 65 characters    | TooLong | spec.devices[0].attributes[test-driver.conformance.drakit.dev/models].strings[1]    |
      | a list attribute with a version that is not semver | Invalid | spec.devices[0].attributes[test-driver.conformance.drakit.dev/firmware].versions[1] |
      | 49 attribute values in two list attributes         | Invalid | spec.devices[0]                                                                     |
      | 65 devices, one with a list attribute              | TooMany | spec.devices                                                                        |

  @kep-5491 @extended @cluster-check
  Scenario Outline: The API server accepts a ResourceSlice with <what>, at its limit
    When a ResourceSlice "good" of the test driver is submitted with <what>
    Then the API server accepts it

    Examples:
      | what                                       |
      | 48 attribute values in two list attributes |
      | 64 devices, one with a list attribute      |
      | 65 devices without a list attribute        |
