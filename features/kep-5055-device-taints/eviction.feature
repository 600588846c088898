Feature: KEP-5055 device taints: a NoExecute taint evicts the pods that use the device
  The device-taint-eviction controller of kube-controller-manager evicts every pod that uses a
  device with a NoExecute taint its claim does not tolerate: it marks the pod DisruptionTarget=True
  (reason DeletionByDeviceTaintManager) and deletes it; the claim is then deallocated. A toleration
  with tolerationSeconds N lets the pod run until N seconds after the taint's timeAdded. The rule's
  status condition EvictionInProgress (for its observedGeneration) says True, reason
  PodsPendingEviction, while pods wait for eviction, and False afterwards. The kit creates the rules
  for devices of the driver under test, so the scenarios certify every driver.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-5055 @core
  Scenario: A NoExecute taint evicts the pod that uses the device and its claim is deallocated
    Given the scenario holds device "failing" of the driver
    And a ResourceClaim "used" requesting device "failing"
    When a pod "victim" is created with the claim "used"
    Then pod "victim" is running
    When a DeviceTaintRule "broken" taints device "failing" with "drakit.dev/broken=ecc" and effect NoExecute
    Then pod "victim" is evicted by the device taint manager
    And the claim "used" is deallocated and reserved for no pod
    And the DeviceTaintRule "broken" reports False with reason Completed

  @kep-5055 @core
  Scenario: A pod that tolerates the NoExecute taint for 20 seconds runs until then, and the rule reports it pending eviction
    Given the scenario holds device "failing" of the driver
    And a ResourceClaim "patient" requesting device "failing" tolerating "drakit.dev/broken" with operator Exists and effect NoExecute for 20 seconds
    When a pod "victim" is created with the claim "patient"
    Then pod "victim" is running
    When a DeviceTaintRule "broken" taints device "failing" with "drakit.dev/broken=ecc" and effect NoExecute
    Then the DeviceTaintRule "broken" reports True with reason PodsPendingEviction and "1 pod needs to be evicted in 1 namespace"
    And pod "victim" is evicted by the device taint manager 20 seconds after DeviceTaintRule "broken" tainted its device
    And the claim "patient" is deallocated and reserved for no pod
    And the DeviceTaintRule "broken" reports False with reason Completed

  @kep-5055 @core
  Scenario: A pod that tolerates the NoExecute taint without a time limit keeps running
    Given the scenario holds device "failing" of the driver
    And a ResourceClaim "tolerant" requesting device "failing" tolerating "drakit.dev/broken=ecc" with operator Equal and effect NoExecute
    When a pod "survivor" is created with the claim "tolerant"
    Then pod "survivor" is running
    When a DeviceTaintRule "broken" taints device "failing" with "drakit.dev/broken=ecc" and effect NoExecute
    Then the DeviceTaintRule "broken" reports False with reason NotStarted
    And pod "survivor" keeps running for 5 seconds
    And the allocation of the claim "tolerant" holds the tolerations of its request
