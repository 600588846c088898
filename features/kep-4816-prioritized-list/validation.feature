Feature: KEP-4816 prioritized list: the API server validates firstAvailable
  A request lists either exactly one set of devices or up to 8 alternatives (firstAvailable
  subrequests), each with a unique DNS-label name and a DeviceClass. Invalid claims are rejected
  with a 422 Invalid status whose details.causes name the field; the kit checks the cause's type
  and field path as kube-apiserver v1.37.2 reports them. The v1 DeviceSubRequest has neither
  firstAvailable nor adminAccess: with strict field validation such a field is an unknown field.

  @kep-4816 @core @cluster-check
  Scenario Outline: The API server rejects a prioritized list with <defect> and names the field
    When a ResourceClaim "bad" is submitted with <defect>
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                                      | cause    | field                                             |
      | 9 subrequests                               | TooMany  | spec.devices.requests[0].firstAvailable           |
      | two subrequests of the same name            | Duplicate | spec.devices.requests[0].firstAvailable[1]       |
      | a subrequest without a deviceClassName      | Required | spec.devices.requests[0].firstAvailable[0].deviceClassName |
      | a subrequest whose name is not a DNS label  | Invalid  | spec.devices.requests[0].firstAvailable[0].name   |
      | a request with both exactly and firstAvailable | Invalid | spec.devices.requests[0]                        |
      | config for a subrequest that does not exist | Invalid  | spec.devices.config[0].requests[0]                |

  @kep-4816 @core @cluster-check
  Scenario Outline: The v1 API has no <field> on a subrequest
    When a ResourceClaim "bad" with <defect> is posted with strict field validation
    Then the API server rejects it as a bad request naming the unknown field "spec.devices.requests[0].firstAvailable[0].<field>"

    Examples:
      | defect                                       | field          |
      | a subrequest that has its own firstAvailable | firstAvailable |
      | a subrequest with adminAccess                | adminAccess    |
