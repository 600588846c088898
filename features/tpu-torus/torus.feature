@tpu-torus @kep-4815
Feature: Chips of a 3D torus and multi-host sub-slices
  A driver of TPU-like chips (the declaration's torus section) gives a claim
  for a sub-slice of a shape chips that form exactly that shape in the
  torus, connected over its links, on every host of the sub-slice; a shape
  the torus cannot hold is never allocated; two sub-slices never share a
  chip; and a claim for a host's chips sees exactly that host's chips. What
  the containers see is checked against the emulator's ground truth on each
  host (<emulator root>/run/drakit-emulator/tpu.json: device node to torus
  coordinate), not against the driver's attributes. Sub-slices are
  KEP-4815 devices: per-device node selection and shared counters.

  Background:
    Given the driver declares a torus

  @extended @emulator
  Scenario: A claim for all of a host's chips sees exactly that host's chips
    Given a ResourceClaim "host" for all the chips of one host
    And a pod "host" is created with the claim "host"
    When pod "host" is running
    Then the chips pod "host" sees are exactly the chips of its host

  @extended @emulator @multi-node
  Scenario: A 2x2x2 sub-slice is a connected 2x2x2 sub-torus over its hosts
    Given a ResourceClaim "sub" for a sub-slice of shape "2x2x2"
    When pods "sub" run on every host of the claim "sub"
    Then the chips the pods "sub" see form a connected "2x2x2" sub-torus
    And the pods "sub" get the TPU runtime environment of a "2x2x2" sub-slice

  @extended @multi-node
  Scenario: A shape the torus cannot hold stays pending
    Given a ResourceClaim "huge" for a sub-slice of shape "4x4x4"
    And a pod "huge" is created with the claim "huge"
    Then pod "huge" stays pending as unschedulable

  @extended @emulator @multi-node
  Scenario: Two sub-slice claims get disjoint chips
    Given a ResourceClaim "left" for a sub-slice of shape "2x2x2"
    And a ResourceClaim "right" for a sub-slice of shape "2x2x2"
    When pods "left" run on every host of the claim "left"
    And pods "right" run on every host of the claim "right"
    Then the chips the pods "left" see form a connected "2x2x2" sub-torus
    And the chips the pods "right" see form a connected "2x2x2" sub-torus
    And the chips the pods "left" see and the chips the pods "right" see are disjoint
