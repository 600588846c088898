Feature: KEP-5055 taints from hardware faults: the driver taints a broken device, Kubernetes keeps work off it or evicts it
  A driver that watches its hardware taints a device in its ResourceSlice when the device breaks, with
  the effect its policy gives the fault (declared in deviceKinds[].faults): NoSchedule keeps new claims
  off the device and leaves running pods alone, NoExecute has the device taint manager evict the pods
  using it and frees their claims. When the fault is gone (the GPU reset) the taint goes and the device
  is allocatable again; a driver restarted during a fault publishes the same taint again. The kit breaks
  the hardware under a claim's device with the fault command the driver declares (drakit's emulator
  supplies one for its GPUs: an Xid error, then a reset) and checks what the API server stored.

  Background:
    Given the driver claims the capability "deviceTaints"
    And the driver publishes at least 1 device

  @kep-5055 @extended @hardware-faults
  Scenario: A fault the driver answers with NoExecute evicts the pod, frees its claim, and the reset clears the taint
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "doomed" requesting 1 device
    When a pod "victim" is created with the claim "doomed"
    Then pod "victim" is running
    When the hardware under the device of the claim "doomed" reports the fault the driver answers with a NoExecute taint
    Then within 5 seconds the driver taints the device of the claim "doomed" as it declares
    And pod "victim" is evicted by the device taint manager
    And the claim "doomed" is deallocated and reserved for no pod
    When the hardware under the device of the claim "doomed" is reset
    Then within 10 seconds the device of the claim "doomed" has no taint
    Given a ResourceClaim "heir" pinned to the device of the claim "doomed"
    When a pod "successor" is created with the claim "heir"
    Then pod "successor" is running

  @kep-5055 @extended @hardware-faults
  Scenario: A fault the driver answers with NoSchedule leaves the running pod alone and keeps new claims off the device
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "drained" requesting 1 device
    When a pod "survivor" is created with the claim "drained"
    Then pod "survivor" is running
    When the hardware under the device of the claim "drained" reports the fault the driver answers with a NoSchedule taint
    Then within 5 seconds the driver taints the device of the claim "drained" as it declares
    And pod "survivor" keeps running for 10 seconds
    When pod "survivor" is deleted
    Then the claim "drained" is deallocated and reserved for no pod
    Given a ResourceClaim "newcomer" pinned to the device of the claim "drained"
    When a pod "latecomer" is created with the claim "newcomer"
    Then pod "latecomer" stays pending as unschedulable
    When the hardware under the device of the claim "drained" is reset
    Then within 10 seconds the device of the claim "drained" has no taint
    And pod "latecomer" is running

  @kep-5055 @extended @hardware-faults
  Scenario: The driver restarted during a fault publishes the same taint again
    Given the kit can inject hardware faults under the driver's devices
    And a ResourceClaim "scarred" requesting 1 device
    When a pod "bystander" is created with the claim "scarred"
    Then pod "bystander" is running
    When the hardware under the device of the claim "scarred" reports the fault the driver answers with a NoSchedule taint
    Then within 5 seconds the driver taints the device of the claim "scarred" as it declares
    When the driver's pods are restarted
    Then within 30 seconds the driver taints the device of the claim "scarred" as it declares
    And pod "bystander" keeps running for 5 seconds
