@needs-api-v1beta1.scheduling.k8s.io @needs-gate-GenericWorkload @needs-gate-DRAWorkloadResourceClaims
Feature: KEP-5729 workload claims: the pods of a PodGroup share its ResourceClaims
  A PodGroup (scheduling.k8s.io/v1beta1) lists up to 4 resourceClaims. A pod that joins the group
  (spec.schedulingGroup.podGroupName) and has a claim entry equal to one of the group's in every field
  (name, resourceClaimName, resourceClaimTemplateName) uses the group's claim: for a template, the
  resourceclaim controller generates ONE claim for the group, owned by it and annotated
  resource.kubernetes.io/pod-claim-name, and records it in the group's and every member's
  status.resourceClaimStatuses. The claim's status.reservedFor holds one entry for the whole group
  (apiGroup scheduling.k8s.io, resource podgroups), the kubelet runs the group's pods with it, and it
  lives as long as the group, not as its pods (dra-1.37-spec.md §11, §17.2 item 1). A pod's entry that
  differs in any field gets a claim of its own. Every DRA driver gets this from the control plane: the
  scenarios use the driver's DeviceClass and check what each container sees.

  Background:
    Given the cluster serves PodGroups with resource claims
    And the driver's DeviceClass exists
    And the driver publishes at least 1 device

  @kep-5729 @core
  Scenario: A PodGroup's claim template yields one claim that all pods of the group use
    Given a ResourceClaimTemplate "one" requesting 1 device
    And a PodGroup "group" with a claim "dev" from template "one"
    When a pod "member-a" of PodGroup "group" is created with a claim "dev" from template "one"
    And a pod "member-b" of PodGroup "group" is created with a claim "dev" from template "one"
    Then pod "member-a" is running
    And pod "member-b" is running
    And the PodGroup "group" has one claim "dev", generated from its template and owned by it
    And pods "member-a" and "member-b" use the claim "dev" of PodGroup "group"
    And the claim "dev" of PodGroup "group" is allocated 1 device
    And the claim "dev" of PodGroup "group" is reserved for the PodGroup "group" alone
    And pod "member-a" sees exactly the devices allocated to its claims
    And pod "member-b" sees exactly the devices allocated to its claims
    And pod "member-b" sees the same devices as pod "member-a"

  @kep-5729 @core
  Scenario: The pods of a gang-scheduled PodGroup share its generated claim
    Given a ResourceClaimTemplate "one" requesting 1 device
    And a PodGroup "gang" that gang-schedules 2 pods with a claim "dev" from template "one"
    When a pod "worker-a" of PodGroup "gang" is created with a claim "dev" from template "one"
    And a pod "worker-b" of PodGroup "gang" is created with a claim "dev" from template "one"
    Then pod "worker-a" is running
    And pod "worker-b" is running
    And the PodGroup "gang" has one claim "dev", generated from its template and owned by it
    And pods "worker-a" and "worker-b" use the claim "dev" of PodGroup "gang"
    And the claim "dev" of PodGroup "gang" is reserved for the PodGroup "gang" alone
    And pod "worker-a" sees exactly the devices allocated to its claims
    And pod "worker-b" sees exactly the devices allocated to its claims
    And pod "worker-b" sees the same devices as pod "worker-a"

  @kep-5729 @core
  Scenario: The group's claim outlives its pods and is deleted with the PodGroup
    Given a ResourceClaimTemplate "one" requesting 1 device
    And a PodGroup "group" with a claim "dev" from template "one"
    When a pod "first" of PodGroup "group" is created with a claim "dev" from template "one"
    Then pod "first" is running
    And the PodGroup "group" has one claim "dev", generated from its template and owned by it
    And pod "first" sees exactly the devices allocated to its claims
    When pod "first" is deleted
    Then the claim "dev" of PodGroup "group" stays allocated and reserved for the PodGroup "group" alone
    When a pod "second" of PodGroup "group" is created with a claim "dev" from template "one"
    Then pod "second" is running
    And pod "second" sees exactly the devices allocated to its claims
    And pod "second" sees the same devices as pod "first"
    When pod "second" is deleted
    And the PodGroup "group" is deleted
    Then the claim "dev" of PodGroup "group" is deleted

  @kep-5729 @core
  Scenario Outline: A pod whose claim entry differs from the PodGroup's in <field> gets a claim of its own
    Given a ResourceClaimTemplate "one" requesting 1 device
    And a ResourceClaimTemplate "other" requesting 1 device
    And a PodGroup "group" with a claim "dev" from template "one"
    When a pod "member" of PodGroup "group" is created with a claim "dev" from template "one"
    And a pod "loner" of PodGroup "group" is created with a claim "<entry>" from template "<template>"
    Then pod "member" is running
    And pod "loner" is running
    And the PodGroup "group" has one claim "dev", generated from its template and owned by it
    And the claim "dev" of PodGroup "group" is reserved for the PodGroup "group" alone
    And the claim "<entry>" of pod "loner" belongs to the pod, not to the PodGroup "group"
    And pod "member" sees exactly the devices allocated to its claims
    And pod "loner" sees exactly the devices allocated to its claims
    And pods "member" and "loner" see different devices

    Examples:
      | field    | entry | template |
      | template | dev   | other    |
      | name     | mine  | one      |

  @kep-5729 @core
  Scenario: A pre-created claim named by the PodGroup is reserved for the group and freed with it
    Given a ResourceClaim "shared" requesting 1 device
    And a PodGroup "group" with the claim "shared"
    When a pod "member-a" of PodGroup "group" is created with the claim "shared"
    And a pod "member-b" of PodGroup "group" is created with the claim "shared"
    Then pod "member-a" is running
    And pod "member-b" is running
    And the claim "shared" is allocated 1 device
    And the claim "shared" is reserved for the PodGroup "group" alone
    And pod "member-a" sees exactly the devices allocated to its claims
    And pod "member-b" sees exactly the devices allocated to its claims
    And pod "member-b" sees the same devices as pod "member-a"
    When pod "member-a" is deleted
    And pod "member-b" is deleted
    Then the claim "shared" stays allocated and reserved for the PodGroup "group" alone
    When the PodGroup "group" is deleted
    Then the claim "shared" is deallocated and reserved for no pod
