@needs-gate-DRADerivedAttributes
Feature: KEP-6080 derived attributes: a claim computes the attribute its constraints compare
  With the alpha gate DRADerivedAttributes a request may define derivedAttributes, each a name
  and a CEL expression evaluated for every candidate device, and a matchAttribute or
  distinctAttribute constraint of the claim then compares the computed values. Every derived
  attribute must be referenced by a constraint that targets its request, its expression must
  return a primitive (or a list of primitives), and a derived name shadows the physical attribute
  of that name in constraints (dra-1.37-spec.md §16). Scenarios are skipped, with the reason, when
  the gate is off.

  Background:
    Given the API server keeps derived attributes in ResourceClaims

  @kep-6080 @extended @cluster-check
  Scenario Outline: The API server rejects a ResourceClaim with <defect>
    When a ResourceClaim "bad" is submitted with <defect>
    Then the API server rejects it as Invalid with cause Invalid at "<field>" saying "<text>"

    Examples:
      | defect                                             | field                                                            | text                                                                   |
      | a derived attribute that no constraint references  | spec.devices.requests[0].exactly.derivedAttributes[0].name       | must be referenced by at least one matchAttribute or distinctAttribute |
      | a derived attribute whose expression returns a map | spec.devices.requests[0].exactly.derivedAttributes[0].expression | must evaluate to a primitive scalar                                    |

  @kep-6080 @extended @cluster-check
  Scenario: matchAttribute over a derived attribute takes devices that agree on the computed value
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": anchor 1, sibling 0, stranger 2
    And a ResourceClaim "socket" requesting the test driver's device "anchor" and 1 more with the same derived "derived/socket", "numa" divided by 2
    When a pod "aligned" is created with the claim "socket"
    Then pod "aligned" is scheduled
    And the claim "socket" is allocated exactly the test driver's devices "anchor" and "sibling"

  @kep-6080 @extended @cluster-check
  Scenario: A derived attribute shadows the physical attribute of its name in constraints
    Given the test driver publishes a pool "numa" of devices with the int attribute "numa": anchor 1, sibling 0, stranger 2
    And a ResourceClaim "shadow" requesting the test driver's device "anchor" and 1 more with the same derived "numa", "numa" divided by 2
    When a pod "aligned" is created with the claim "shadow"
    Then pod "aligned" is scheduled
    And the claim "shadow" is allocated exactly the test driver's devices "anchor" and "sibling"

  @kep-6080 @extended
  Scenario: A derived copy of the driver's numaNode aligns the driver's devices
    Given the driver claims the capability "numaNodeAttribute"
    And the driver publishes 2 devices on one node with the same "resource.kubernetes.io/numaNode"
    And a ResourceClaim "pair" requesting 2 devices with the same derived "derived/numa", a copy of "resource.kubernetes.io/numaNode"
    When a pod "numa" is created with the claim "pair"
    Then pod "numa" is running
    And the claim "pair" is allocated 2 devices
    And the devices allocated to the claim "pair" have the same "resource.kubernetes.io/numaNode"
    And pod "numa" sees exactly the devices allocated to its claims
