@needs-gate-DRAListTypeAttributes
Feature: KEP-5491 list-type attributes of the driver: the NUMA nodes a device is close to
  A driver may publish int list attributes (the alpha gate DRAListTypeAttributes); the scheduler
  treats a list as a set: includes() tests membership, matchAttribute needs an element common to
  all the chosen devices, distinctAttribute pairwise disjoint lists (dra-1.37-spec.md §15,
  behaviours 3 and 4). The driver declares its list of the NUMA nodes a device is close to
  (deviceKinds[].numaNodesAttribute), built by the rule of the list form of
  resource.kubernetes.io/numaNode (§15 behaviour 6, KEP-6072): the NUMA node of the device's PCI
  function first, then the nodes of the same socket at the minimum SLIT distance from it. The kit
  reads that ground truth from the node's sysfs (numa_node of the PCI function,
  devices/system/node/node<N>/distance, the sockets of the nodes' CPUs) and holds the published
  lists, and what the scheduler allocates by them, to it.

  Background:
    Given the driver claims the capability "listTypeAttributes"
    And the kit can read the node's sysfs

  @kep-5491 @extended @inventory
  Scenario: Each of the driver's devices lists the NUMA nodes the node's sysfs puts close to it
    Then each of the driver's devices carries the NUMA nodes the node's sysfs puts close to it as its NUMA nodes list

  @kep-5491 @extended @inventory
  Scenario: A selector with includes() over the driver's list gets a device close to that NUMA node
    Given a ResourceClaim "close" requesting 1 device whose NUMA nodes list includes the NUMA node the node's sysfs gives it
    When a pod "numa" is created with the claim "close"
    Then pod "numa" is running
    And the device allocated to the claim "close" has that NUMA node in its NUMA nodes list and in the node's sysfs
    And pod "numa" sees exactly the devices allocated to its claims

  @kep-5491 @extended @inventory
  Scenario: A selector with includes() of a NUMA node the device is not close to does not get it
    Given a ResourceClaim "far" requesting 1 device whose NUMA nodes list includes another NUMA node than the node's sysfs gives it
    When a pod "numa" is created with the claim "far"
    Then pod "numa" stays pending as unschedulable
    And the claim "far" is not allocated

  @kep-5491 @extended @inventory
  Scenario: matchAttribute over the driver's list takes devices whose lists share a NUMA node
    Given the driver publishes 2 devices on one node with the same "resource.kubernetes.io/numaNode"
    And a ResourceClaim "pair" requesting 2 devices with the same NUMA nodes list
    When a pod "numa" is created with the claim "pair"
    Then pod "numa" is running
    And the devices allocated to the claim "pair" have NUMA nodes lists with a node in common, in the node's sysfs too
    And pod "numa" sees exactly the devices allocated to its claims

  @kep-5491 @extended @inventory
  Scenario: distinctAttribute over the driver's list cannot take more devices than the node has NUMA nodes
    Given a ResourceClaim "spread" requesting 1 device more than the node's sysfs has NUMA nodes, with pairwise different NUMA nodes lists
    When a pod "numa" is created with the claim "spread"
    Then pod "numa" stays pending as unschedulable
    And the claim "spread" is not allocated
