Feature: KEP-5055 device taints: a tainted device is allocated only to claims that tolerate its taint
  A DeviceTaintRule (resource.k8s.io/v1, an administrator's API) adds its taint to the devices its
  deviceSelector selects. The scheduler allocates a device with a NoSchedule or NoExecute taint
  only to a request that tolerates it (key, operator Equal or Exists, value, effect) and copies the
  request's tolerations into the allocation; effect None changes nothing. A NoSchedule taint leaves
  the pods that already use the device alone. The kit creates the rules for devices of the driver
  under test, so the scenarios certify every driver; it judges what the API server stored (the
  allocations, the pods, the rule's status), never the driver's account.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-5055 @core
  Scenario: A NoSchedule taint keeps a new claim off the device
    Given the scenario holds devices "tainted" and "spare" of the driver
    When a DeviceTaintRule "maintenance" taints device "tainted" with "drakit.dev/maintenance=planned" and effect NoSchedule
    And a ResourceClaim "any" requesting 1 device
    And a pod "elsewhere" is created with the claim "any"
    Then pod "elsewhere" is running
    And the claim "any" is allocated a device other than "tainted"
    When a ResourceClaim "pinned" requesting device "tainted"
    And a pod "kept-off" is created with the claim "pinned"
    Then pod "kept-off" stays pending as unschedulable
    And the claim "pinned" is not allocated

  @kep-5055 @core
  Scenario: A NoSchedule taint leaves the pod that uses the device alone
    Given the scenario holds device "busy" of the driver
    And a ResourceClaim "used" requesting device "busy"
    When a pod "user" is created with the claim "used"
    Then pod "user" is running
    When a DeviceTaintRule "maintenance" taints device "busy" with "drakit.dev/maintenance" and effect NoSchedule
    Then the DeviceTaintRule "maintenance" reports False with reason OtherEffect
    And pod "user" keeps running for 5 seconds
    And the claim "used" is still allocated device "busy"

  @kep-5055 @core
  Scenario Outline: A claim that tolerates the NoSchedule taint (<toleration>) is allocated the device and its allocation holds the toleration
    Given the scenario holds device "tainted" of the driver
    When a DeviceTaintRule "maintenance" taints device "tainted" with "drakit.dev/maintenance=planned" and effect NoSchedule
    And a ResourceClaim "tolerant" requesting device "tainted" tolerating <toleration>
    And a pod "user" is created with the claim "tolerant"
    Then pod "user" is running
    And the claim "tolerant" is allocated device "tainted"
    And the allocation of the claim "tolerant" holds the tolerations of its request
    And pod "user" sees exactly the devices allocated to its claims

    Examples:
      | toleration                                                              |
      | "drakit.dev/maintenance=planned" with operator Equal and effect NoSchedule |
      | "drakit.dev/maintenance=planned" with operator Equal                     |
      | "drakit.dev/maintenance" with operator Exists                            |

  @kep-5055 @core @cluster-check
  Scenario Outline: A toleration that does not match the NoSchedule taint (<toleration>) does not let the claim have the device
    Given the scenario holds device "tainted" of the driver
    When a DeviceTaintRule "maintenance" taints device "tainted" with "drakit.dev/maintenance=planned" and effect NoSchedule
    And a ResourceClaim "intolerant" requesting device "tainted" tolerating <toleration>
    And a pod "kept-off" is created with the claim "intolerant"
    Then pod "kept-off" stays pending as unschedulable
    And the claim "intolerant" is not allocated

    Examples:
      | toleration                                                               |
      | "drakit.dev/maintenance=unplanned" with operator Equal                    |
      | "drakit.dev/maintenance" with operator Exists and effect NoExecute        |

  @kep-5055 @core
  Scenario: Effect None has no scheduling effect, and the rule reports what NoExecute would do
    Given the scenario holds device "marked" of the driver
    And a ResourceClaim "used" requesting device "marked"
    When a pod "user" is created with the claim "used"
    Then pod "user" is running
    When a DeviceTaintRule "notice" taints device "marked" with "drakit.dev/notice" and effect None
    Then the DeviceTaintRule "notice" reports False with reason NoEffect and "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace"
    And pod "user" keeps running for 5 seconds
    When pod "user" is deleted
    Then the claim "used" is deallocated and reserved for no pod
    When a ResourceClaim "next" requesting device "marked"
    And a pod "next" is created with the claim "next"
    Then pod "next" is running
    And the claim "next" is allocated device "marked"

  @kep-5055 @core @cluster-check
  Scenario: An admin-access claim gets a NoSchedule-tainted device only when it tolerates the taint
    Given the scenario holds device "busy" of the driver
    And the scenario's namespace allows admin access
    And a ResourceClaim "used" requesting device "busy"
    When a pod "user" is created with the claim "used"
    Then pod "user" is running
    When a DeviceTaintRule "maintenance" taints device "busy" with "drakit.dev/maintenance" and effect NoSchedule
    And a ResourceClaim "inspect" requesting device "busy" with admin access
    And a pod "inspector" is created with the claim "inspect"
    Then pod "inspector" stays pending as unschedulable
    And the claim "inspect" is not allocated
    When a ResourceClaim "inspect-tolerating" requesting device "busy" with admin access tolerating "drakit.dev/maintenance" with operator Exists
    And a pod "admin" is created with the claim "inspect-tolerating"
    Then the claim "inspect-tolerating" is allocated device "busy" for admin access
    And the allocation of the claim "inspect-tolerating" holds the tolerations of its request
    And pod "user" keeps running for 2 seconds
