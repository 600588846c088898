Feature: KEP-5304 device metadata: a container reads what its claim's devices are
  A driver that enables device metadata in its kubelet plugin (k8s.io/dynamic-resource-allocation
  kubeletplugin, EnableDeviceMetadata; no Kubernetes feature gate) writes, for each request of a
  prepared claim, a metadata file and a CDI spec that bind-mounts it read-only into the containers
  using the claim, at /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/
  <driver>-metadata.json, or below resourceclaimtemplates/<pod's claim entry>/ for a claim made from
  a template (dra-1.37-spec.md §10). The file is a JSON stream of DeviceMetadata objects
  (metadata.resource.k8s.io), one per version, newest first: v1beta1, then v1alpha1 where the
  driver also writes it. Each names the claim (name, namespace, uid; podClaimName for a template's
  claim) and the request as its allocation result names it (request/subrequest for a prioritized
  list, whose path segment drops the subrequest), and lists the request's devices with driver, pool,
  name and attributes, which the kit requires to equal what the device's ResourceSlice stores. A
  container that does not use the claim gets no file. Drivers opt in (capability deviceMetadata), so
  these scenarios are Extended; containers.feature holds the Core rule every driver passes.

  Background:
    Given the driver claims the capability "deviceMetadata"
    And the driver's DeviceClass exists

  @kep-5304 @extended
  Scenario: A container reads its claim's devices with the attributes their ResourceSlice stores
    Given a ResourceClaim "pair" requesting 2 devices
    When a pod "reader" is created with the claim "pair"
    Then pod "reader" is running
    And the claim "pair" is allocated 2 devices
    And pod "reader" reads the device metadata of request "gpu" of its claim "pair"
    And pod "reader" sees exactly the devices allocated to its claims

  @kep-5304 @extended
  Scenario: A claim made from a template has its metadata below the pod's claim entry
    Given a ResourceClaimTemplate "one-gpu" requesting 1 device
    When a pod "templated" is created with a claim "accel" from template "one-gpu"
    Then pod "templated" is running
    And pod "templated" reads the device metadata of request "gpu" of its claim "accel"

  @kep-5304 @extended
  Scenario: Of two containers of a pod, only the one that uses the claim reads its metadata
    Given a ResourceClaim "shared-pod" requesting 1 device
    When a pod "two-containers" is created with the claim "shared-pod" and a second container "bystander" that uses no claim
    Then pod "two-containers" is running
    And pod "two-containers" reads the device metadata of request "gpu" of its claim "shared-pod"
    And container "bystander" of pod "two-containers" has no device metadata file

  @kep-5304 @extended
  Scenario: A prioritized list's metadata lies under the request and names the chosen subrequest
    Given a ResourceClaim "falls-back" requesting first more devices than the scenario may use as "too-many", else 1 device as "one"
    When a pod "chooser" is created with the claim "falls-back"
    Then pod "chooser" is running
    And the claim "falls-back" is allocated for exactly the requests "gpu/one"
    And pod "chooser" reads the device metadata of request "gpu" of its claim "falls-back"
    And the device metadata of request "gpu" of the claim "falls-back" in pod "chooser" names the request "gpu/one"
