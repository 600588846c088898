Feature: KEP-4381 structured parameters: a pre-created MIG device is a device like any other
  MIG devices created before the driver starts (a static layout, as mig-parted leaves it) are
  published as plain devices, each with its own UUID and no counters. A claim for one must give the
  container exactly that MIG device: NVML shows it with the published UUID, profile and memory
  under its GPU, and the container has the GPU's node and the MIG device's capability nodes.

  @kep-4381 @extended
  Scenario: A claim for a pre-created MIG device gets exactly that MIG device
    Given the driver's DeviceClass exists
    And the driver publishes pre-created MIG devices with profile prefix "1g."
    And a GPU "static" with pre-created MIG devices of profile prefix "1g."
    And a ResourceClaim "fixed" requesting 1 partition with profile prefix "1g." on GPU "static"
    When a pod "pre" is created with the claim "fixed"
    Then pod "pre" is running
    And the claim "fixed" is allocated 1 device
    And pod "pre" sees exactly the GPUs and MIG devices allocated to its claims through NVML
    And pod "pre" has device nodes for exactly its GPUs and the capabilities of its MIG devices
