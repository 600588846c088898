Feature: KEP-4680 device health in the pod's status: what the driver streams reaches the pods that use the device
  A driver that serves the kubelet's DRAResourceHealth service streams the health of its devices; the
  kubelet shows it, per allocated device, in status.containerStatuses[].allocatedResourcesStatus of the
  pods that use it (health Healthy, Unhealthy or Unknown, and the driver's message). A device not
  refreshed within the health timeout, or whose driver went away, is Unknown. The kit reads what the
  API server stored in the pod's status, never the driver's own account. Every driver that claims
  deviceHealth shows its devices Healthy and goes Unknown when it stops; a driver that declares
  hardware faults and a fault command (drakit's emulator supplies one for its GPUs: an Xid error, then
  a reset as nvidia-smi -r) has the kit break the hardware under a claim's device.

  Background:
    Given the driver claims the capability "deviceHealth"
    And the driver publishes at least 1 device

  @kep-4680 @core @needs-gate-ResourceHealthStatus
  Scenario: A running pod's status shows every device of its claim as Healthy
    Given a ResourceClaim "checked" requesting 1 device
    When a pod "examined" is created with the claim "checked"
    Then pod "examined" is running
    And within 30 seconds pod "examined" shows the devices of the claim "checked" as Healthy

  # The driver stops through its declared pods (driver.pods): the kit gives the DaemonSet that runs
  # them a node selector no node has, and the scenario's cleanup takes it away, whatever the outcome;
  # a driver the kit cannot stop so keeps it from certifying, it is no finding. The kubelet (1.37.2)
  # forgets a driver's health when its stream ends but notifies no pod: Unknown reaches the pod's
  # status at the pod's next resync (the kubelet's syncFrequency: 1 minute by default, plus up to half
  # of it as jitter, then the status manager's write), hence 120 seconds. A new stream's Healthy is
  # notified at once.
  @kep-4680 @core @needs-gate-ResourceHealthStatus
  Scenario: The health goes Unknown when the driver stops, and comes back when it runs again
    Given a ResourceClaim "orphaned" requesting 1 device
    When a pod "waiting" is created with the claim "orphaned"
    Then pod "waiting" is running
    And within 30 seconds pod "waiting" shows the devices of the claim "orphaned" as Healthy
    When the driver stops on the node
    Then within 120 seconds pod "waiting" shows the devices of the claim "orphaned" as Unknown
    When the driver runs again on the node
    Then within 60 seconds pod "waiting" shows the devices of the claim "orphaned" as Healthy

  # What a fault means and how a driver should answer it is the hardware vendor's: these scenarios
  # judge a driver against the answers it declares (deviceKinds[].faults), through its fault command.
  @kep-4680 @extended @hardware-faults @needs-gate-ResourceHealthStatus
  Scenario: A device fault shows as Unhealthy in the pod's status, and the reset as Healthy again
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "ailing" requesting 1 device
    When a pod "patient" is created with the claim "ailing"
    Then pod "patient" is running
    And within 30 seconds pod "patient" shows the devices of the claim "ailing" as Healthy
    When the hardware under the device of the claim "ailing" reports the fault the driver answers with a NoSchedule taint
    Then within 10 seconds pod "patient" shows the devices of the claim "ailing" as Unhealthy
    When the hardware under the device of the claim "ailing" is reset
    Then within 10 seconds pod "patient" shows the devices of the claim "ailing" as Healthy

  @kep-4680 @extended @hardware-faults @needs-gate-ResourceHealthStatus
  Scenario: Two pods on different devices each see only their own device's health
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "broken" requesting 1 device
    And a ResourceClaim "sound" requesting 1 device
    When a pod "unlucky" is created with the claim "broken"
    And a pod "lucky" is created with the claim "sound"
    Then pod "unlucky" is running
    And pod "lucky" is running
    And pod "unlucky" sees exactly the devices allocated to its claims
    And pod "lucky" sees exactly the devices allocated to its claims
    And pods "unlucky" and "lucky" see different devices
    When the hardware under the device of the claim "broken" reports the fault the driver answers with a NoSchedule taint
    Then within 10 seconds pod "unlucky" shows the devices of the claim "broken" as Unhealthy
    And within 5 seconds pod "lucky" shows the devices of the claim "sound" as Healthy

  @kep-4680 @extended @hardware-faults @needs-gate-ResourceHealthStatus
  Scenario: A fault the driver answers with no taint leaves the device Healthy
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "buggy" requesting 1 device
    When a pod "crasher" is created with the claim "buggy"
    Then pod "crasher" is running
    When the hardware under the device of the claim "buggy" reports the fault the driver answers with no taint
    Then the device of the claim "buggy" stays without a taint for 5 seconds
    And within 5 seconds pod "crasher" shows the devices of the claim "buggy" as Healthy
