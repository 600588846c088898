// Package declaration is the driver declaration: what a DRA driver says
// about itself so that drakit's conformance kit can certify it — its name
// and pods, the kinds of device it publishes with their DeviceClasses, the
// attribute that names a device and how a container shows it, the
// observers that check containers, the optional capabilities of
// Kubernetes 1.37 DRA it claims, and the hardware it manages. It is a
// strict, versioned YAML document.
//
// # Document
//
//	apiVersion: conformance.drakit.dev/v1alpha1
//	kind: DriverDeclaration
//	driver:
//	  name: gpu.drakit.dev           # the DRA driver name (ResourceSlice spec.driver)
//	  version: v0.1.0                # optional, goes into the report
//	  pods:                          # optional: driver logs in diagnostics, restart scenarios
//	    namespace: drakit-system     # empty: all namespaces
//	    selector: app.kubernetes.io/name=drakit-driver
//	deviceKinds:                     # one per DeviceClass; at least one without partitions
//	- name: gpu                      # DNS label, unique
//	  deviceClass: gpu.drakit.dev    # selects exactly this kind's devices; unique
//	  identity:
//	    attribute: uuid              # string attribute naming one device (QualifiedName)
//	    env:                         # optional: one variable per allocated device
//	      name: DRAKIT_DEVICE_{device}
//	      value: "{identity}"        # the default
//	  memoryCapacity: memory         # optional: capacity holding memory in bytes
//	  numaNodesAttribute: closeNUMANodes  # optional, with listTypeAttributes: int list of close NUMA nodes
//	  observers: [cdi, env, deviceNodes, nvml]   # default: cdi, plus env with identity.env
//	  deviceNodes:                   # with the deviceNodes observer: nodes per allocated device
//	  - path: "/dev/nvidia{attribute:minor}"     # below /dev
//	    type: c                      # optional: c or b
//	    major: "195"                 # optional: decimal or a pattern
//	    minor: "{attribute:minor}"   # optional
//	  mounts:                        # with the mounts observer: mounts per allocated device
//	  - path: "/var/run/gpu/{device}"
//	    readOnly: true               # optional: the container must see it ro
//	  faults:                        # optional, first whole kind: faults the kit may inject
//	  - {xid: 48, health: Unhealthy, taint: NoExecute}   # or fault: <word> for any other
//	  faultCommand:                  # with faults: run on the kit's host, each an argv
//	    inject: [drakit, emulator, fault, xid, --device, "{identity}", --code, "{fault}"]
//	    reset: [drakit, emulator, fault, reset, --device, "{identity}"]
//	- name: mig
//	  deviceClass: mig.gpu.drakit.dev
//	  identity: {attribute: uuid, env: {name: "DRAKIT_DEVICE_{device}"}}
//	  partitions:                    # only with partitionableDevices claimed
//	    parentKind: gpu              # default: the only kind without partitions
//	    profileAttribute: profile
//	    parentIdentityAttribute: parentUUID
//	capabilities:                    # claimed: true; false or absent: unclaimed
//	  partitionableDevices: true
//	  numaNodeAttribute: true
//	hardware: emulated               # or real; required
//	torus:                           # optional: a TPU-like driver's classes (@tpu-torus)
//	  chipClass: tpu.drakit.dev      # a deviceKinds[*].deviceClass
//	  subsliceClass: subslice.tpu.drakit.dev
//	  shapeAttribute: shape          # the sub-slices' "XxYxZ" string attribute
//	bindingConditions:               # with bindingConditions claimed, and only then (KEP-5007)
//	  conditions: [gpu.drakit.dev/attached]          # every device's bindingConditions, 1 to 4
//	  failureConditions: [gpu.drakit.dev/attach-failed]
//	  setBy: kit                     # kit: an attach controller outside the driver, the kit's in a
//	                                 # conformance run; driver: the driver itself (needs deviceStatus)
//	scenarios:                       # optional: the kit's scenarios without a run's --tags
//	  tags: "@kep-4381 && ~@interpose"   # a godog tag filter
//
// # Placeholders
//
// identity.env.name and identity.env.value are patterns, and so are
// deviceNodes[*].path, major and minor and mounts[*].path. {device} stands
// for the device's name in its ResourceSlice, {identity} for the value of
// identity.attribute, {attribute:<name>} for the value of the device's
// attribute <name> (ints in decimal). In the name every substituted value
// is upper-cased and each character other than A-Z and 0-9 becomes "_", so
// DRAKIT_DEVICE_{device} is DRAKIT_DEVICE_GPU_0 for device gpu-0; the
// literal text of a name is letters, digits and "_", starting with a letter
// or "_". The value takes substitutions verbatim. Each pattern needs a
// placeholder; braces are only for placeholders. EnvVariable.ExpandName and
// ExpandValue apply a pattern to a device. A path takes substitutions
// verbatim, each within one path element (a value with "/" does not
// expand); it must be absolute and clean, a device node's below /dev, and
// needs a placeholder. A device number expands to a decimal number, or is
// one. DeviceNode.Expand and Mount.ExpandPath apply them to a device.
//
// faultCommand.inject and reset are argvs whose arguments are patterns of
// those placeholders and two more: {node}, the node whose ResourceSlice
// publishes the device, and {fault}, the fault as declared (its fault, or
// its xid in decimal). Substitutions are verbatim, one argument each: no
// shell splits or expands them. The program, the first element, has no
// placeholder; each command names the device, and inject names {fault}
// when more than one fault is declared. FaultCommand.ExpandInject and
// ExpandReset apply them. The kit runs them on its own host with a
// timeout; a bare program name is looked for beside the kit's executable
// first, then in PATH.
//
// # Observers
//
// cdi compares the container with the claim's CDI spec on the node (the
// DRA contract, for every driver, where the kit can read the node);
// env checks identity.env; deviceNodes and mounts check deviceNodes and
// mounts: the container has those of every allocated device (each node of
// the declared type and numbers, each mount read-only where declared) and
// none of another device of the driver on the node; nvml asks NVML in the
// container for exactly the allocated GPUs and MIG devices, by identity.
// An observer applies to a kind when the kind lists it; deviceNodes and
// mounts are listed exactly when the kind declares deviceNodes and mounts.
// env, deviceNodes, mounts and nvml judge from inside the container, so
// they decide without access to the node's files.
//
// # Capabilities
//
// KnownCapabilities lists every optional capability of Kubernetes 1.37 DRA
// a driver can claim, with its KEP, feature gate, stage, the capabilities
// it requires and its meaning; Declaration.Claimed says whether one is
// claimed. The kit runs a capability's scenarios only when it is claimed
// and reports the others as "capability X (KEP-NNNN) unclaimed" (Capability's
// String). A claim is a promise: a claimed capability that misbehaves
// fails. DRA features of 1.37 that every driver gets or that belong to the
// control plane are not capabilities: structured parameters (KEP-4381),
// prioritized lists (KEP-4816), extended resources (KEP-5004), workload
// claims (KEP-5729), derived attributes (KEP-6080), ResourcePoolStatusRequest
// (KEP-5677), DeviceTaintRules (admin-made taints, KEP-5055), the kubelet's
// PodResources (KEP-3695) and the scheduler's filter timeout.
//
// # Parsing, defaulting, validation
//
// Parse and Load decode strictly through internal/strictyaml (one YAML
// document, no duplicate keys, no unknown or case-mismatched fields, no
// values of the wrong type), then Default fills what the comments above
// call defaults, then Validate checks everything at once: DNS subdomains
// (driver name, at most 63 characters, and DeviceClasses), DNS labels
// (kinds, namespace), QualifiedNames (attributes, capacities), the label
// selector, the patterns, unique kinds, classes and observers, known
// observers, capabilities and hardware, partitions only with
// partitionableDevices claimed and claimed only with a kind of partitions,
// each claimed capability's requirements, a parent kind that exists
// and is whole, and faults, each named once by fault or xid, with a fault
// command and only then. Every content error matches errors.Is(err, ErrInvalid);
// field problems come as one *ValidationError with each field's path and,
// for a parsed document, the line it is written on (for a missing field,
// the line of the object that lacks it). Validate is deterministic and
// changes nothing.
//
// # Flags
//
// The declaration is the one place a driver setting lives. Flags write its
// fields: each of Flags names the field it writes (--uuid-attribute writes
// deviceKinds[whole].identity.attribute), --set PATH=VALUE writes any field
// (Set: deviceKinds takes an index or a role, whole, partitions or shared),
// and Overrides builds the declaration from a file and the flags given, or
// from the flags alone, then defaults and validates it, each problem naming
// the flag that wrote the field. A new field needs no flag to be set.
//
// KitSettings is the declaration as the kit's scenarios read it (Settings):
// the kinds of the three roles flattened, derived and never set otherwise.
//
// The package imports nothing of the conformance package, which imports it.
package declaration
