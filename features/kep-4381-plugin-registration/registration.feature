Feature: KEP-4381 structured parameters: the driver's kubelet plugin registration
  A DRA driver registers with the kubelet through a socket in the kubelet's plugin registry
  (<kubelet root>/plugins_registry). Asked Registration.GetInfo, it answers type DRAPlugin, the
  driver's name, the endpoint of its DRA service, and as supported versions the gRPC services it
  serves ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth", …), not releases; the
  kubelet rejects an empty list (DRA spec §17.1). The kit asks GetInfo as the kubelet's plugin
  watcher does and calls the endpoint's NodeUnprepareResources with no claims; it never calls
  NotifyRegistrationStatus, which only the kubelet may. A driver restarted on the node (its pods
  deleted, as a rolling update does) registers again; the kubelet keeps pods that hold prepared
  claims running meanwhile and unprepares their claims through the new driver later. When the last
  plugin of a driver disconnects or unregisters, the kubelet deletes the driver's ResourceSlices
  for the node 30 s later, unless the driver registers again within those 30 s: then its devices
  stay published (a slice replaced meanwhile, with another UID, is only a warning: no KEP or API
  stops a driver from replacing its own slices). The scenarios that
  stop or restart the driver run alone, and restore the driver, with its slices, even when they fail.

  Background:
    Given the kit can reach the kubelet's plugin registry
    And the driver publishes at least 1 device

  @kep-4381 @extended @registration
  Scenario: The driver registers as a DRA plugin with the kubelet
    Then the driver's registration socket answers GetInfo as a DRAPlugin named after the driver
    And the endpoint the driver registered is a unix socket that serves DRAPlugin
    And the versions the driver registered are gRPC service names, "v1.DRAPlugin" among them

  @kep-4381 @extended @registration
  Scenario: A pod keeps its prepared claim through a driver restart, which unprepares it afterwards
    Given the kit can read the node's CDI directory
    And a ResourceClaim "held" requesting 1 device
    When a pod "holder" is created with the claim "held"
    Then pod "holder" is running
    And the node's CDI directory has a spec for the claim "held" of pod "holder"
    When the driver's pods are restarted
    Then pod "holder" still runs, its containers never restarted
    And the driver registers again in the kubelet's plugin registry
    When pod "holder" is deleted
    Then the node's CDI directory has no spec for the claim "held" of pod "holder"
    And the claim "held" is deallocated and reserved for no pod
    Given a ResourceClaim "next" requesting 1 device
    When a pod "successor" is created with the claim "next"
    Then pod "successor" is running
    And pod "successor" sees exactly the devices allocated to its claims

  @kep-4381 @extended @registration
  Scenario: The kubelet deletes the slices of a driver gone for 30 seconds
    When the driver stops on the node
    Then the kubelet deletes the driver's ResourceSlices for the node 30 seconds after the driver went away
    When the driver runs again on the node
    Then the driver publishes at least 1 device

  @kep-4381 @extended @registration
  Scenario: The kubelet keeps the slices of a driver back within 30 seconds
    When the driver stops on the node
    And the driver runs again on the node
    Then the driver's devices on the node outlive the kubelet's 30 second grace
