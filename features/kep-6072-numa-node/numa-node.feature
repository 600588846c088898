Feature: KEP-6072 the standard numaNode attribute: the NUMA node of the device's PCI function
  resource.kubernetes.io/numaNode is the NUMA node the kernel gives the device's PCI function
  (its sysfs numa_node), omitted when that is -1; with list-type attributes it may be a list, the
  device's own node first (dra-1.37-spec.md §16, §15 behaviour 6). The kit reads the node's sysfs
  and holds the driver's attribute to it: the lint rule "numa-node" (conformance/lint) for every
  device, a claim that selects the sysfs NUMA node of a device for the scheduler. That each
  device's pciBusID is a PCI function of the node and its pcieRoot that function's root complex is
  the inventory rule of KEP-4381 (features/kep-4381-structured-parameters/slices.feature).

  @kep-6072 @extended @slices @inventory
  Scenario: Each device's numaNode is its PCI function's NUMA node in the node's sysfs, and absent where sysfs gives none
    Given the driver claims the capability "numaNodeAttribute"
    And the kit can read the node's sysfs
    Then the driver's ResourceSlices pass the lint rule "numa-node"

  @kep-6072 @extended @inventory
  Scenario: A claim selecting the NUMA node the node's sysfs gives a device gets that device
    Given the kit can read the node's sysfs
    And a ResourceClaim "local" requesting 1 device on the NUMA node the node's sysfs gives it
    When a pod "numa" is created with the claim "local"
    Then pod "numa" is running
    And the device allocated to the claim "local" is on that NUMA node in the node's sysfs
    And pod "numa" sees exactly the devices allocated to its claims

  @kep-6072 @extended @inventory
  Scenario: A claim selecting another NUMA node than the node's sysfs gives a device does not get it
    Given the kit can read the node's sysfs
    And a ResourceClaim "remote" requesting 1 device on another NUMA node than the node's sysfs gives it
    When a pod "numa" is created with the claim "remote"
    Then pod "numa" stays pending as unschedulable
    And the claim "remote" is not allocated

  @kep-6072 @extended @cluster-check @needs-gate-DRAListTypeAttributes
  Scenario: The standard numaNode may be a list of NUMA nodes, and includes() selects by any of them
    Given the API server keeps list-type device attributes
    And the test driver publishes a pool "numa" of devices with the int attribute "resource.kubernetes.io/numaNode": near [0 1], far [2 3]
    And a ResourceClaim "close" requesting 1 device of the test driver whose "resource.kubernetes.io/numaNode" includes 1
    When a pod "picky" is created with the claim "close"
    Then pod "picky" is scheduled
    And the claim "close" is allocated exactly the test driver's devices "near"
