Feature: KEP-5004 extended resources: quota and the node count a pod's extended resources once
  A pod's extended resources backed by DRA are charged to the namespace's ResourceQuota like a
  device plugin's: requests.<resource name> by the pod, and the devices of its claim by class
  (requests.deviceclass.resource.kubernetes.io/<class> and <class>.deviceclass.resource.k8s.io/devices).
  The claim does not charge requests.<resource name> again for what the pod charged (kube-apiserver
  v1.37.2's claim evaluator subtracts the pod's usage), and a pod that would exceed the quota is
  rejected. The devices are not node resources: no device plugin advertises the name, so
  node.status.allocatable and capacity list it by neither name, and a pod using the devices leaves
  both unchanged — the node's device-plugin resources and DRA are not double-counted.

  Background:
    Given the driver's DeviceClass exists
    And the driver publishes at least 2 devices
    And a DeviceClass "gpus" for the driver's devices with an extended resource name

  @kep-5004 @core
  Scenario: The quota counts a pod's extended resource once, and a pod beyond it is rejected
    Given the scenario's namespace has a ResourceQuota of 2 of the extended resource of DeviceClass "gpus"
    When a pod "app" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "app" is running
    And the ResourceQuota counts 2 of the extended resource of DeviceClass "gpus" as used, the pod's and its claim's requests once
    When a pod "extra" asking for 1 of the extended resource of DeviceClass "gpus" is submitted
    Then the ResourceQuota rejects it as exceeded

  @kep-5004 @core
  Scenario: The node's allocatable and capacity neither list the extended resource nor change with a pod using it
    Given the kit notes every node's allocatable and capacity, which list no extended resource of DeviceClass "gpus"
    When a pod "app" is created asking for 2 of the extended resource of DeviceClass "gpus"
    Then pod "app" is running
    And the scheduler created one claim for the extended resources of pod "app", allocated 2 devices
    And the allocatable and capacity of the node of pod "app" are as the kit noted them
