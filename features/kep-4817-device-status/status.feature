Feature: KEP-4817 device status: the driver reports what it set up for each allocated device
  A driver may report, per allocated device, conditions, data and network data (interface name,
  hardware address, IPs) in the claim's status.devices. The API server accepts entries only for
  devices allocated to the claim, validates the network data, lets a driver's identity change only
  its own driver's entries (granular status authorization: resourceclaims/driver), and drops the
  entries when the claim is deallocated. The kit compares what the driver reports with the claim's
  allocation and with the node's network interfaces.

  Background:
    Given the driver claims the capability "deviceStatus"
    And the driver publishes at least 1 device

  @kep-4817 @core
  Scenario: The driver reports the status of exactly the devices allocated to the claim
    Given a ResourceClaim "reported" requesting 1 device
    When a pod "reporter" is created with the claim "reported"
    Then pod "reporter" is running
    And the driver reports the status of exactly the devices allocated to the claim "reported"
    And pod "reporter" sees exactly the devices allocated to its claims

  @kep-4817 @extended
  Scenario: The network interfaces the driver reports exist on the node with their hardware addresses
    Given a ResourceClaim "wired" requesting 1 device
    When a pod "networked" is created with the claim "wired"
    Then pod "networked" is running
    And the driver reports the status of exactly the devices allocated to the claim "wired"
    And the devices the driver allocated to the claim "wired" are PCI functions of the node
    And the network data the driver reports for the claim "wired" names interfaces of the node

  @kep-4817 @core
  Scenario: The status goes when the claim is deallocated
    Given a ResourceClaim "brief" requesting 1 device
    When a pod "short" is created with the claim "brief"
    Then pod "short" is running
    And the driver reports the status of exactly the devices allocated to the claim "brief"
    When pod "short" is deleted
    Then the claim "brief" is deallocated and reserved for no pod
    And the claim "brief" has no device status

  @kep-4817 @core
  Scenario: The API server refuses status for a device not allocated to the claim
    Given a ResourceClaim "held" requesting 1 device
    When a pod "holder" is created with the claim "held"
    Then pod "holder" is running
    When a status entry for a device not allocated to the claim "held" is submitted
    Then the API server rejects it as Invalid with cause Invalid at "status.devices[0]"

  @kep-4817 @core
  Scenario Outline: The API server validates the status entries of allocated devices: <defect>
    Given a ResourceClaim "checked" requesting 1 device
    When a pod "checker" is created with the claim "checked"
    Then pod "checker" is running
    When a status entry for the claim "checked" with <defect> is submitted
    Then the API server rejects it as Invalid with cause <cause> at "<field>"

    Examples:
      | defect                                   | cause    | field                                        |
      | an interface name of 257 bytes           | TooLong  | status.devices[0].networkData.interfaceName   |
      | a hardware address of 129 bytes          | TooLong  | status.devices[0].networkData.hardwareAddress |
      | the IP "192.0.2.5" without a prefix length | Invalid  | status.devices[0].networkData.ips[0]          |
      | the IP "192.0.2.5/24" twice              | Duplicate | status.devices[0].networkData.ips[1]         |
      | 17 IPs                                   | TooMany  | status.devices[0].networkData.ips             |
      | 9 conditions                             | TooMany  | status.devices[0].conditions                  |
      | data that is not a JSON object           | Invalid  | status.devices[0].data                        |

  @kep-4817 @extended
  Scenario: The driver's identity cannot write the status of another driver's device
    Given the driver's devices have a PCIe root peer DeviceClass
    And a ResourceClaim "mixed" requesting 1 device and 1 device of the peer class with the same "resource.kubernetes.io/pcieRoot"
    When a pod "mixer" is created with the claim "mixed"
    Then pod "mixer" is running
    And the driver reports the status of exactly the devices allocated to the claim "mixed"
    And the driver's ServiceAccount cannot write the status of the other driver's device in the claim "mixed"
