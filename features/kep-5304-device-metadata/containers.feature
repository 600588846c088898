Feature: KEP-5304 device metadata: a container that uses no claim sees none
  Device metadata files are bind-mounted only into the containers that use a claim's request
  (dra-1.37-spec.md §10, e2e "must map device metadata to the right containers"). Whether or not
  the driver writes metadata, a container of the pod that uses none of its claims has no file and no
  mount below /var/run/kubernetes.io/dra-device-attributes: every driver passes this.

  Background:
    Given the driver's DeviceClass exists

  @kep-5304 @core
  Scenario: A container that uses no claim has no device metadata, beside one that uses the claim
    Given a ResourceClaim "beside" requesting 1 device
    When a pod "pair-of-containers" is created with the claim "beside" and a second container "bystander" that uses no claim
    Then pod "pair-of-containers" is running
    And pod "pair-of-containers" sees exactly the devices allocated to its claims
    And container "bystander" of pod "pair-of-containers" has no device metadata file
