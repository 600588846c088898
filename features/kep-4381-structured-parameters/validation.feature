Feature: KEP-4381 structured parameters: the API server validates ResourceClaims
  Invalid claims are rejected when they are created, with a 422 Invalid status whose
  details.causes name the offending field. The kit checks the cause's type and field path, which
  are stable, rather than the message text (dra-1.37-spec.md §20).

  @kep-4381 @core @cluster-check
  Scenario Outline: The API server rejects a ResourceClaim with <defect> and names the field
    When a ResourceClaim "bad" is submitted with <defect>
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                               | cause   | field                                                        |
      | count -1 in an ExactCount request    | Invalid | spec.devices.requests[0].exactly.count                       |
      | a CEL selector that does not compile | Invalid | spec.devices.requests[0].exactly.selectors[0].cel.expression |
      | 33 requests                          | TooMany | spec.devices.requests                                        |

  @kep-4381 @core @cluster-check
  Scenario: A request for 0 devices in ExactCount mode is stored as a request for 1 device
    When a ResourceClaim "zero" is submitted with count 0 in an ExactCount request
    Then the API server accepts it
    And the claim "zero" stores request "gpu" with allocationMode ExactCount and count 1
