@needs-api-v1beta1.scheduling.k8s.io @needs-gate-GenericWorkload @needs-gate-DRAWorkloadResourceClaims
Feature: KEP-5729 workload claims: the API server limits a PodGroup's claims and keeps them unchanged
  A PodGroup and a Workload's PodGroupTemplate list at most 4 resourceClaims (TooMany), and a
  PodGroup's resourceClaims are immutable (dra-1.37-spec.md §0.3, §11 item 6). These checks are
  declarative validation of scheduling.k8s.io/v1beta1: the causes name the field.

  Background:
    Given the cluster serves PodGroups with resource claims

  @kep-5729 @core @cluster-check
  Scenario: The API server rejects a PodGroup with 5 claims
    When a PodGroup "crowded" with 5 claims from template "one" is submitted
    Then the API server rejects it as Invalid with cause TooMany at "spec.resourceClaims" saying "must have at most 4 items"

  @kep-5729 @core @cluster-check
  Scenario: The API server accepts a PodGroup with 4 claims
    When a PodGroup "full" with 4 claims from template "one" is submitted
    Then the API server accepts it

  @kep-5729 @core @cluster-check
  Scenario: The API server rejects a Workload whose PodGroupTemplate has 5 claims
    When a Workload "crowded" whose PodGroupTemplate has 5 claims from template "one" is submitted
    Then the API server rejects it as Invalid with cause TooMany at "spec.podGroupTemplates[0].resourceClaims" saying "must have at most 4 items"

  @kep-5729 @core @cluster-check
  Scenario: The API server rejects a change of a PodGroup's claims as immutable
    Given the driver's DeviceClass exists
    And a ResourceClaimTemplate "one" requesting 1 device
    And a PodGroup "group" with a claim "dev" from template "one"
    When the PodGroup "group" is updated with another claim "more" from template "one"
    Then the API server rejects it as Invalid with cause Invalid at "spec.resourceClaims" saying "field is immutable"
