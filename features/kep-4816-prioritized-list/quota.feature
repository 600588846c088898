Feature: KEP-4816 prioritized list: quota charges the worst case
  ResourceQuota counts the devices a namespace's claims request per DeviceClass
  (<class>.deviceclass.resource.k8s.io/devices). A prioritized list is charged, when the claim is
  created, the largest count any of its subrequests asks of the class, whichever the scheduler
  later picks.

  @kep-4816 @core @cluster-check
  Scenario: A prioritized list is charged its largest subrequest
    Given the driver's DeviceClass exists
    And the scenario's namespace has a ResourceQuota of 2 devices of the driver's DeviceClass
    When a ResourceClaim "worst-case" requesting first 3 devices as "three", else 1 device as "one" is submitted
    Then the ResourceQuota rejects it as exceeded
    When a ResourceClaim "fits" requesting first 2 devices as "two", else 1 device as "one" is submitted
    Then the API server accepts it
    And the ResourceQuota counts 2 devices of the driver's DeviceClass as used
    When a ResourceClaim "over" requesting first 1 device as "one", else 1 device as "also-one" is submitted
    Then the ResourceQuota rejects it as exceeded
