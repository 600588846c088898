Feature: KEP-5055 device taints: what a DeviceTaintRule's deviceSelector selects
  A rule's deviceSelector names a driver, a pool and a device, each optional and ANDed: an empty
  selector selects every device of the cluster, a rule without a selector none. Rules of effect None
  disturb nothing, and the device-taint-eviction controller reports in their status how many
  published devices they select: the kit compares that with the devices of every pool's newest
  generation. That a rule for one device keeps claims off exactly that device is in
  scheduling.feature.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-5055 @core @cluster-check
  Scenario: A rule with an empty device selector selects every device of the cluster
    When a DeviceTaintRule "everything" with an empty device selector taints with "drakit.dev/audit" and effect None
    Then the DeviceTaintRule "everything" reports every published device selected

  @kep-5055 @core @cluster-check
  Scenario: A rule without a device selector selects no device
    When a DeviceTaintRule "nothing" without a device selector taints with "drakit.dev/audit" and effect None
    Then the DeviceTaintRule "nothing" reports False with reason NoEffect and "0 published devices selected"

  @kep-5055 @core
  Scenario: The driver, pool and device of a selector are ANDed: another driver's name selects nothing of the device's pool
    Given the scenario holds device "target" of the driver
    When a DeviceTaintRule "other-driver" selecting the pool and name of device "target" but driver "other.conformance.drakit.dev" taints with "drakit.dev/maintenance" and effect NoSchedule
    And a ResourceClaim "pinned" requesting device "target"
    And a pod "user" is created with the claim "pinned"
    Then pod "user" is running
    And the claim "pinned" is allocated device "target"
