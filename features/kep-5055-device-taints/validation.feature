Feature: KEP-5055 device taints: the API server validates taints and tolerations
  Invalid DeviceTaintRules, tolerations and slice taints are rejected when they are created, with a
  422 Invalid status whose details.causes name the field; the kit checks the cause's type and field
  path. The rules the kit submits select a driver that no node has, so one accepted by mistake
  taints nothing. What 1.37.2 answers differs from the KEP's words in two places, and the code wins:
  a taint without a key is Invalid (the label-name check), not Required; and a request with more
  than 16 tolerations is accepted (the limit is in the type's documentation only), so no scenario
  asks for it.

  @kep-5055 @core @cluster-check
  Scenario Outline: The API server rejects a DeviceTaintRule with <defect> and names the field
    When a DeviceTaintRule "bad" is submitted with <defect>
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                             | cause        | field             |
      | effect PreferNoSchedule            | NotSupported | spec.taint.effect |
      | no effect                          | Required     | spec.taint.effect |
      | no key                             | Invalid      | spec.taint.key    |
      | a key that is not a label name     | Invalid      | spec.taint.key    |
      | a value that is not a label value  | Invalid      | spec.taint.value  |

  @kep-5055 @core @cluster-check
  Scenario: The API server sets the timeAdded of a DeviceTaintRule's taint
    When a DeviceTaintRule "good" is submitted with no defect
    Then the API server accepts it
    And the API server set the timeAdded of the DeviceTaintRule "good"

  @kep-5055 @core @cluster-check
  Scenario Outline: The API server rejects a ResourceClaim with <defect> and names the field
    When a ResourceClaim "bad" is submitted with <defect>
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                                        | cause        | field                                                     |
      | a toleration with operator Exists and a value | Invalid      | spec.devices.requests[0].exactly.tolerations[0].value     |
      | a toleration with operator Within             | NotSupported | spec.devices.requests[0].exactly.tolerations[0].operator  |
      | a toleration with effect PreferNoSchedule     | NotSupported | spec.devices.requests[0].exactly.tolerations[0].effect    |

  @kep-5055 @core @cluster-check
  Scenario: A toleration without an operator is stored with operator Equal
    When a ResourceClaim "defaulted" is submitted with a toleration without an operator
    Then the API server accepts it
    And the claim "defaulted" stores its toleration with operator Equal

  @kep-5055 @core @cluster-check
  Scenario: The API server rejects a device with 17 taints in a ResourceSlice
    When a ResourceSlice "tainted" of the test driver with a device of 17 taints is submitted
    Then the API server rejects it as Invalid with cause TooMany at "spec.devices[0].taints"
