Feature: KEP-4381 structured parameters: the driver applies its own opaque configuration
  A claim's spec.devices.config can hand a driver parameters only it understands (opaque.driver
  and opaque.parameters); the scheduler copies them into status.allocation.devices.config and the
  driver applies them when it prepares the claim. Their format is the driver's own, so the kit
  never invents one: it passes the sample the driver declares (deviceKinds[].opaqueConfig) and
  checks the effect the declaration says a container shows. A driver that declares no sample
  (it may define no configuration at all) is not judged here.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-4381 @core
  Scenario: A container shows the effect of the opaque config its claim passes the driver
    Given a ResourceClaim "configured" requesting 1 device with the driver's sample opaque config
    When a pod "configured" is created with the claim "configured"
    Then pod "configured" is running
    And pod "configured" sees exactly the devices allocated to its claims
    And pod "configured" shows the effect of the driver's sample opaque config
