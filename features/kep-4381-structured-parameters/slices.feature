Feature: KEP-4381 structured parameters: the driver's ResourceSlices are well-formed
  A driver's ResourceSlices are its whole contract with the scheduler. The API server validates
  each slice on its own; these rules (conformance/lint) judge what it cannot: pools complete and
  consistent across their slices, the standard attributes with their types, identities unique in
  the cluster, slices for nodes that exist, and, where the kit can read the node's sysfs, the
  published devices against the node's PCI functions (their NUMA nodes are KEP-6072's,
  features/kep-6072-numa-node).
  Every finding cites its rule and the KEP, API field or declaration it enforces, and names the
  pool, the slice and the device. What no KEP or API requires (names in another driver's domain,
  a pool of several owners, a slice its Node does not own) is a warning: listed, never counted.

  Background:
    Given the driver publishes at least 1 device

  @kep-4381 @core @slices
  Scenario: The driver's pools are complete, with one node selection and unique device names
    Then the driver's ResourceSlices pass the lint rule "pools"

  @kep-4381 @core @slices
  Scenario: The driver's standard attributes are the standard ones, with their types
    Then the driver's ResourceSlices pass the lint rule "qualified-names"
    And the driver's ResourceSlices pass the lint rule "standard-attributes"

  @kep-4381 @core @slices
  Scenario: A device's identity names it alone
    Then the driver's ResourceSlices pass the lint rule "identity"

  @kep-4381 @core @slices
  Scenario: The driver's slices for a node name a Node of the cluster
    Then the driver's ResourceSlices pass the lint rule "node-selection"

  @kep-4381 @extended @slices @inventory @pci-topology
  Scenario: The driver publishes exactly the node's devices, with their PCIe roots
    Given the kit can read the node's sysfs
    Then the driver's ResourceSlices pass the lint rule "inventory"
