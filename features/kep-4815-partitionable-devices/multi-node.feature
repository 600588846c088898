Feature: KEP-4815 partitionable devices: a device that several nodes share serves a pod on each of them
  A device that is available on more than one node (a slice's nodeSelector or allNodes, or the
  device's own under perDeviceNodeSelection) is allocated once; the allocation's node selector lets
  every one of those nodes use it, and one claim for it serves pods on all of them (dra-1.37-spec.md
  §1 items 10 and 16, §6 item 4). It applies to drivers that claim perDeviceNodeSelection, and needs
  a cluster of several nodes and such a device; it is skipped, with the reason, otherwise.

  @kep-4815 @extended @multi-host @multi-node
  Scenario: A multi-node device is allocated once and the pods on each of its nodes run with it
    Given the driver claims the capability "perDeviceNodeSelection"
    And the cluster has at least 2 nodes
    And the driver's DeviceClass exists
    And the driver publishes a device available on at least 2 nodes
    And a ResourceClaim "shared" requesting the multi-node device
    When a pod on each node of the multi-node device is created with the claim "shared"
    Then the pods on each node of the multi-node device are running
    And the claim "shared" is allocated the multi-node device once, for all of its nodes
    And the claim "shared" is reserved for the pods on each node of the multi-node device
    And the pods on each node of the multi-node device see exactly the devices allocated to their claims
