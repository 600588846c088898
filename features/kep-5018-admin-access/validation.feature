Feature: KEP-5018 admin access: only namespaces labelled for it may ask for admin access
  A request with adminAccess: true gives a cluster administrator's pod access to devices that
  other claims may hold. The API server accepts such a ResourceClaim or ResourceClaimTemplate
  only in a namespace labelled resource.kubernetes.io/admin-access: "true" (the value exactly
  "true"); elsewhere it rejects it as Forbidden. kube-apiserver v1.37.2 names the field
  spec.devices.requests[<i>].adminAccess, also for a template (not spec.spec.…, and not
  ….exactly.adminAccess, where the field is). A status update that allocates a device for admin
  access (what a scheduler writes) is rejected the same way, at status.allocation.devices.results[<i>].adminAccess.

  @kep-5018 @core @cluster-check
  Scenario Outline: A <kind> with an adminAccess request is rejected in a namespace <labelled>
    Given the scenario's namespace carries the admin-access label with value "<value>"
    When a <kind> "admin" is submitted with an adminAccess request
    Then the API server rejects it as Invalid with cause Forbidden at "spec.devices.requests[0].adminAccess" saying "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"

    Examples:
      | kind                  | labelled                           | value |
      | ResourceClaim         | labelled "false"                   | false |
      | ResourceClaim         | labelled "True" (the case matters) | True  |
      | ResourceClaimTemplate | labelled "false"                   | false |

  @kep-5018 @core @cluster-check
  Scenario: A ResourceClaim with an adminAccess request is rejected in a namespace without the label
    When a ResourceClaim "admin" is submitted with an adminAccess request
    Then the API server rejects it as Invalid with cause Forbidden at "spec.devices.requests[0].adminAccess" saying "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"

  @kep-5018 @core @cluster-check
  Scenario Outline: A <kind> with an adminAccess request is accepted in a namespace labelled "true"
    Given the scenario's namespace allows admin access
    When a <kind> "admin" is submitted with an adminAccess request
    Then the API server accepts it
    And the <kind> "admin" asks for admin access as stored

    Examples:
      | kind                  |
      | ResourceClaim         |
      | ResourceClaimTemplate |

  @kep-5018 @core @cluster-check
  Scenario: A claim status that allocates a device for admin access is rejected in a namespace without the label
    Given the scenario holds device "target" of the driver
    And a ResourceClaim "plain" requesting device "target"
    When a status update of the claim "plain" that allocates it device "target" for admin access is submitted
    Then the API server rejects it as Invalid with cause Forbidden at "status.allocation.devices.results[0].adminAccess" saying "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
