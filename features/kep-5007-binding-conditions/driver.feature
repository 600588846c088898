Feature: KEP-5007 device binding conditions on the driver's devices
  A driver whose devices need attaching before a pod may use them (a device
  that an external controller connects to the node the scheduler chose)
  publishes them with bindingConditions and bindingFailureConditions, and
  declares which (bindingConditions of the driver declaration). The
  scheduler copies both lists into the allocation result, waits in PreBind
  until every binding condition is True in the claim's status.devices, and
  gives up on the device, clearing the allocation, when a failure condition
  is True (dra-1.37-spec.md §9, behaviours 3 to 5). With setBy "kit" the
  driver leaves its conditions to an attach controller outside it, which the
  kit's attach controller stands in for; the pod that then runs must see
  exactly the devices allocated to it.

  Background:
    Given the driver claims the capability "bindingConditions"

  @kep-5007 @extended
  Scenario: The driver's devices carry the declared binding conditions
    Then every device the driver publishes has the declared bindingConditions and bindingFailureConditions

  @kep-5007 @extended
  Scenario: A pod with the driver's device stays unbound until every declared binding condition is True
    Given the kit's attach controller sets the driver's binding conditions
    And a ResourceClaim "attachable" requesting 1 device
    When a pod "user" is created with the claim "attachable"
    Then the claim "attachable" is allocated a device of the driver with the declared binding conditions and an allocationTimestamp
    And pod "user" stays unbound for 6 seconds while the scheduler waits for binding conditions
    When the kit's attach controller sets every declared binding condition of the device of claim "attachable" to True
    Then pod "user" is running
    And pod "user" sees exactly the devices allocated to its claims

  @kep-5007 @extended
  Scenario: A binding failure condition of the driver's device clears the allocation and the pod runs once attached
    Given the kit's attach controller sets the driver's binding conditions
    And a ResourceClaim "attachable" requesting 1 device
    When a pod "user" is created with the claim "attachable"
    Then pod "user" stays unbound for 2 seconds while the scheduler waits for binding conditions
    When the kit's attach controller sets the declared binding failure condition of the device of claim "attachable" to True
    Then the claim "attachable" loses its allocation
    And the scheduler reports for pod "user" "device binding failed"
    And the claim "attachable" is allocated a device of the driver with the declared binding conditions and an allocationTimestamp
    When the kit's attach controller sets every declared binding condition of the device of claim "attachable" to True
    Then pod "user" is running
    And pod "user" sees exactly the devices allocated to its claims
