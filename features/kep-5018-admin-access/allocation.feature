Feature: KEP-5018 admin access: an administrator's claim shares a device without taking it
  A claim with adminAccess gets a device even while another claim holds it, and the driver
  prepares it for the administrator's pod, which sees it, while the owner's pod keeps running and
  keeps seeing it. Admin-access allocations do not count against the device: while its owner
  holds it, an ordinary claim still cannot get it; once the owner lets go, an ordinary claim gets
  it although the administrator's claim is still allocated. A driver may refuse admin access
  (capability adminAccess), so these scenarios are Extended. In v1.37.2 admin access does not
  pass a NoSchedule device taint (features/kep-5055-device-taints/scheduling.feature), and an
  admin-access allocation draws its device's counters again, so the scenarios hold a device that
  consumes no counters (a partitionable GPU its owner holds cannot be given to an administrator).

  Background:
    Given the driver's DeviceClass exists
    And the driver claims the capability "adminAccess"
    And the scenario holds device "busy" of the driver
    And the scenario's namespace allows admin access
    And a ResourceClaim "owned" requesting device "busy"
    And a pod "owner" is created with the claim "owned"
    And pod "owner" is running

  @kep-5018 @extended
  Scenario: An admin-access claim gets a device another claim holds, and both pods see it
    When a ResourceClaim "inspect" requesting device "busy" with admin access
    And a pod "inspector" is created with the claim "inspect"
    Then pod "inspector" is running
    And the claim "inspect" is allocated device "busy" for admin access
    And the claim "owned" is still allocated device "busy"
    And pod "inspector" sees exactly the devices allocated to its claims
    And pod "owner" keeps running for 2 seconds
    And pod "owner" sees exactly the devices allocated to its claims

  @kep-5018 @extended
  Scenario: An admin-access allocation does not count against the device
    When a ResourceClaim "inspect" requesting device "busy" with admin access
    And a pod "inspector" is created with the claim "inspect"
    Then pod "inspector" is running
    When a ResourceClaim "next" requesting device "busy"
    And a pod "next" is created with the claim "next"
    Then pod "next" stays pending as unschedulable
    And the claim "next" is not allocated
    When pod "owner" is deleted
    Then pod "next" is running
    And the claim "next" is allocated device "busy"
    And the claim "inspect" is still allocated device "busy" for admin access
    And pod "next" sees exactly the devices allocated to its claims
    And pod "inspector" sees exactly the devices allocated to its claims
