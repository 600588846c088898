Feature: KEP-4381 structured parameters: devices of two drivers aligned on a standard attribute
  A claim can ask for devices of different drivers that share the value of a standard attribute,
  such as a NIC and the GPU below the same PCIe root complex
  (resource.kubernetes.io/pcieRoot, matchAttribute across requests). Both drivers must publish the
  attribute as the node's PCI topology has it; the scheduler must allocate an aligned pair or
  none. The kit resolves every allocated device's PCI address in the node's sysfs.

  Background:
    Given the driver's devices have a PCIe root peer DeviceClass
    And the driver publishes at least 1 device

  @kep-4381 @extended @pci-topology
  Scenario: A claim for a device and a peer driver's device under one PCIe root gets an aligned pair
    Given a ResourceClaim "aligned" requesting 1 device and 1 device of the peer class with the same "resource.kubernetes.io/pcieRoot"
    When a pod "pair" is created with the claim "aligned"
    Then pod "pair" is running
    And the devices allocated to the claim "aligned" sit below one PCIe root complex of the node
    And pod "pair" sees exactly the devices allocated to its claims

  @kep-4381 @extended @pci-topology @cluster-check
  Scenario: A claim that no PCIe root can satisfy stays pending
    Given a ResourceClaim "unaligned" requesting 1 device of the peer class and 1 more device than any value of "resource.kubernetes.io/pcieRoot" has, all with that value
    When a pod "stranded" is created with the claim "unaligned"
    Then pod "stranded" stays pending as unschedulable
    And the claim "unaligned" is not allocated
