Feature: KEP-4816 prioritized list: the scheduler takes the first alternative it can satisfy
  A request with firstAvailable subrequests is allocated by the first subrequest, in list order,
  that can be satisfied; the allocation result names it as <request>/<subrequest>, and the driver
  returns its devices to the kubelet under the request's name (the kubelet maps a container's
  claims[].request by it; its checkpoint records what the driver returned). Constraints and config
  may name a subrequest: a constraint on a subrequest applies only when it is chosen and can make
  the scheduler pass it over, and of the config only the entries for the whole request and for the
  chosen subrequest reach the driver (status.allocation.devices.config, from which the driver
  prepares the claim; kube-scheduler v1.37.2 clears an entry's requests there when the entry covers
  every request of the claim, so that it applies to all). Every scenario uses the driver's
  DeviceClass.

  Background:
    Given the driver's DeviceClass exists

  @kep-4816 @core
  Scenario: The first subrequest wins when it can be satisfied, even when a later one could be too
    Given a ResourceClaim "two-first" requesting first 2 devices as "two", else 1 device as "one"
    When a pod "takes-two" is created with the claim "two-first"
    Then pod "takes-two" is running
    And the claim "two-first" is allocated 2 devices
    And the claim "two-first" is allocated from subrequest "two"
    And pod "takes-two" sees exactly the devices allocated to its claims

  @kep-4816 @core
  Scenario: A subrequest that cannot be satisfied is passed over for the next one
    Given a ResourceClaim "falls-back" requesting first more devices than the scenario may use as "too-many", else 1 device as "one"
    When a pod "takes-one" is created with the claim "falls-back"
    Then pod "takes-one" is running
    And the claim "falls-back" is allocated 1 device
    And the claim "falls-back" is allocated for exactly the requests "gpu/one"
    And pod "takes-one" sees exactly the devices allocated to its claims

  @kep-4816 @extended
  Scenario: The driver returns a subrequest's devices to the kubelet under the request's name
    Given a ResourceClaim "falls-back" requesting first more devices than the scenario may use as "too-many", else 1 device as "one"
    When a pod "takes-one" is created with the claim "falls-back"
    Then pod "takes-one" is running
    And the claim "falls-back" is allocated for exactly the requests "gpu/one"
    And the kubelet recorded the devices the driver prepared for the claim "falls-back" under request "gpu" alone

  @kep-4816 @core
  Scenario: A constraint on a subrequest makes the scheduler choose the next one
    Given a ResourceClaim "pair" with request "first" for 1 device and request "second" for 1 device, first as "same" with the identity of the device of "first", else as "other"
    When a pod "pair" is created with the claim "pair"
    Then pod "pair" is running
    And the claim "pair" is allocated 2 devices
    And the claim "pair" is allocated for exactly the requests "first" and "second/other"
    And pod "pair" sees exactly the devices allocated to its claims

  @kep-4816 @core
  Scenario: Only the config of the request and of the chosen subrequest reaches the driver
    Given a ResourceClaim "configured" requesting first more devices than the scenario may use as "too-many", else 1 device as "one", with opaque config for each subrequest and for the request
    When a pod "configured" is created with the claim "configured"
    Then pod "configured" is running
    And the claim "configured" is allocated for exactly the requests "gpu/one"
    And the allocation of the claim "configured" passes the driver the claim's config for exactly "gpu" and "gpu/one"
    And pod "configured" sees exactly the devices allocated to its claims
