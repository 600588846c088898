// Package driver is drakit's reference DRA driver: a kubelet plugin that
// discovers GPUs through NVML like a real node driver, publishes them as
// ResourceSlices and prepares ResourceClaims by writing CDI specs.
//
// # Discovery
//
// The driver loads NVML (github.com/NVIDIA/go-nvml) from the driver root,
// <DriverRoot>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 or the other usual
// library directories (see FindNVMLLibrary), so the emulator's shim and a real
// libnvidia-ml behave the same. PCIe root and NUMA node come from sysfs below
// SysfsRoot through k8s.io/dynamic-resource-allocation/deviceattribute.
// Discovery runs once at start; the devices are static for the process
// lifetime, except that health (below) withdraws the devices of a lost GPU
// and taints faulty ones. A GPU already lost at start (NVML answers
// ERROR_GPU_IS_LOST) is logged and left out until a driver restart after
// it is back. A GPU whose sysfs entry is missing is still published, without
// the standard attributes the missing entry would have provided.
//
// # Published resources
//
// One pool named after the node. A GPU whose MIG mode is disabled (or that
// has no MIG) is one device gpu-<minor>. Attributes:
// resource.kubernetes.io/pcieRoot, resource.kubernetes.io/pciBusID and
// resource.kubernetes.io/numaNode (scalar form; omitted when sysfs reports
// no NUMA affinity), and in the driver's domain uuid, productName,
// architecture (e.g. "Hopper"), brand, driverVersion, cudaDriverVersion and
// cudaComputeCapability (versions, normalized to semver: 570.172.08 is
// published as 570.172.8), minor and index (ints). Capacity: memory (bytes).
// type is "gpu" on full GPUs and "mig" on MIG devices, so DeviceClasses can
// tell them apart (gpu.<driver> selects type "gpu", mig.<driver> type
// "mig"). String values longer than the API's 64-character limit are
// truncated.
//
// With Config.ListAttributes (--list-attributes; KEP-5491, the cluster
// needs the alpha gate DRAListTypeAttributes, which the driver cannot
// detect) every device, whole GPU or MIG device, also has closeNUMANodes,
// an int list of the NUMA nodes close to its (parent's) PCI function:
// deviceattribute's list form of numaNode read from sysfs, the function's
// numa_node first, then the nodes at the minimum distance in
// /sys/devices/system/node/node<N>/distance whose CPUs are on the same
// socket; none when numa_node is -1. A slice with it holds at most 64
// devices. Without the gate the API server drops the list and, as
// deviceattribute documents, rejects the attribute left without a value:
// the slice is not published (logged).
//
// # MIG
//
// A GPU whose current MIG mode is enabled is published in one of two ways,
// decided once at start:
//
//   - Dynamic MIG (no MIG device exists on it, or only ones this driver
//     created, as its checkpoint records): a partitionable device family
//     (KEP-4815). The pool gets a counter set gpu-<minor>-counter-set with,
//     as NVIDIA's DRA driver has them, multiprocessors, copy-engines,
//     decoders, encoders, jpeg-engines, ofa-engines and memory (bytes) — the
//     largest amount any GI profile has, counters with value 0 left out —
//     and memory-slice-<i> (value 1) for every memory slice a placement
//     covers. The full GPU gpu-<minor> consumes the whole set; every possible
//     placement of every GI profile is a device
//     gpu-<minor>-mig-<profile>-<start> (profile in lower case without dots,
//     '+' as '-': gpu-0-mig-1g10gb-me-3) consuming its profile's amounts and
//     the memory slices it covers, so the scheduler makes overlapping
//     partitions and the full GPU unavailable by itself. Partition
//     attributes: type "mig", profile (e.g. "1g.10gb", named as go-nvlib
//     names it from NVML's profile info), profileID (the driver's profile
//     ID), parentUUID, parentMinor, parentIndex, placementStart,
//     placementSize, the parent's productName, architecture, brand,
//     versions and standard PCI/NUMA attributes; capacity memory (bytes),
//     multiprocessors, copyEngines, decoders, encoders, jpegEngines,
//     ofaEngines. The full GPU additionally has profile "full".
//   - Static MIG (a MIG device exists that the driver did not create): the
//     existing MIG devices only, as plain devices gpu-<minor>-mig-gi<G>-ci<C>
//     without counters: type "mig", profile (the CI's, "1c.3g.40gb" for a CI
//     smaller than its GI), uuid (MIG-…), parent and placement attributes,
//     gpuInstance, computeInstance; capacity memory. The full GPU is not
//     published: it cannot be used while partitioned.
//
// Counter sets live in slices of their own (a slice sets devices or
// sharedCounters, never both), at most 8 per slice; a device slice holds at
// most 64 devices when one of them consumes counters, 128 otherwise. With
// Config.PartitionableAlpha the device slices that consume counters set
// partitionTypeAttribute to <driver>/profile (gate
// DRAPartitionableDevicesType, an alpha part of KEP-4815) and each
// consumption lists one compatibility group (KEP-5963): "full-gpu" for the
// full GPU, "mig" for partitions. With Config.BindingConditions
// (--binding-conditions) every device lists bindingConditions
// <driver>/attached and bindingFailureConditions <driver>/attach-failed
// (KEP-5007, BindingConditionTypes): the scheduler binds a pod with one of
// them only once an attach controller outside the driver (the conformance
// kit's, in a conformance run) sets the first True in the claim's
// status.devices; the driver never sets them.
//
// # Prepare and unprepare
//
// The kubelet plugin's plumbing is reference/pluginharness's, whose
// contract holds here: per-claim errors, idempotency, conflicts, rollback,
// the checkpoint and the CDI spec names. The driver adds discovery, the
// CDI edits of its devices and the dynamic MIG devices it creates and
// destroys.
//
// PrepareResourceClaims writes one CDI spec per claim into the CDI directory,
// named k8s.<driver>-claim_<claimUID>.json, kind k8s.<driver>/claim, with one
// CDI device <claimUID>-<device> per allocated device of this driver. The
// driver defines no opaque configuration; config entries are ignored, as are
// allocation results of other drivers. A claim whose results name a device
// of another pool or an unknown device, or a device already prepared for
// another claim (unless either claim uses admin access), gets a per-claim
// error and no spec, as does a claim UID that is not made of letters,
// digits and '-' (the UID names the spec file).
//
// A dynamic MIG partition is created at prepare: the driver checkpoints the
// claim as incomplete with the partition's placement, creates the GPU
// instance at exactly the allocated placement
// (CreateGpuInstanceWithPlacement with the profile's ID), checkpoints its
// id, creates one compute instance spanning it, reads the MIG device's UUID
// and the GI's and CI's capability minors (<DriverRoot>/proc/driver/
// nvidia-caps/mig-minors) and checkpoints them, then writes the spec and
// marks the claim prepared. Its CDI device injects the parent's
// /dev/nvidia<minor> and /dev/nvidia-caps/nvidia-cap<GI minor> and
// nvidia-cap<CI minor> (host paths below the driver root), with
// DRAKIT_DEVICE_<DEVICE>=<MIG UUID>. A placement NVML refuses as in use
// (INSUFFICIENT_RESOURCES) fails the claim with ErrMIGPlacementBusy; what
// the claim had created is destroyed again. A static MIG device injects the
// same nodes for the existing instance; admin access to a dynamic partition
// is refused (it exists only while a claim uses it). Unprepare destroys the
// CI, then the GI; instances already gone count as destroyed.
//
// At start the driver destroys the instances of every claim still marked
// incomplete (a restart in the middle of a prepare), finding a GI whose id
// was not recorded yet by its profile and placement, and forgets the claim;
// the kubelet retries the prepare. MIG devices that the checkpoint does not
// know are logged and left alone.
//
// Both calls are idempotent: preparing a prepared claim again rewrites the
// same spec and returns the same CDI device IDs; unpreparing a claim that is
// not prepared (or unknown) succeeds. The driver owns and cleans its CDI specs:
// unprepare removes the claim's spec by its deterministic name even when the
// checkpoint has no record of it, so a crash between writing a spec and
// checkpointing it leaves nothing behind once the kubelet unprepares.
//
// # Checkpoint
//
// Prepared claims are checkpointed in <KubeletPluginDir>/checkpoint.json
// (versioned JSON with a SHA-256 checksum, written atomically: temporary file,
// fsync, rename, fsync of the directory) after every change, so a driver
// restarted between prepare and unprepare keeps its state. A checkpoint with
// a bad checksum or an unknown version stops the driver with
// ErrCorruptCheckpoint naming the file; it is never silently discarded.
//
// # Health and taints (KEP-4680, KEP-5055)
//
// Run starts a watcher goroutine (stopped with ctx) that holds one NVML
// session: it registers Xid, double-bit and single-bit ECC events on every
// GPU that supports them, waits for them 5 s at a time (EventSetWait) and
// reads each GPU's fault state after every event of it and at least every
// 5 s: the recovery action (field FI_DEV_GET_GPU_RECOVERY_ACTION), volatile
// uncorrected ECC errors, retired pages pending, remapped rows (pending,
// failure), clocks event reasons, and ERROR_GPU_IS_LOST from any of them.
// What NVML does not support (ERROR_NOT_SUPPORTED) is no information, never
// a fault. The state is read once before the pool is first published, so a
// restarted driver publishes the same state-derived taints at once. Per
// device (a GPU's state applies to the GPU and all its MIG devices):
//
//	fault                              health     taint <driver>/<key>=<value>        effect
//	lost (ERROR_GPU_IS_LOST)           Unhealthy  withdrawn from the pool
//	recovery action NONE               Healthy    none
//	recovery action drain-p2p,         Unhealthy  recovery-action=<action>            NoSchedule
//	  drain-and-reset (others unknown
//	  here: action-<n>)
//	recovery action gpu-reset,         Unhealthy  recovery-action=<action>            NoExecute
//	  node-reboot, bus-reset,
//	  system-reboot
//	device Xid event                   Unhealthy  xid=<code>                          by the recovery action
//	                                                                                  read right after it; NVML
//	                                                                                  gives none: NoExecute for
//	                                                                                  48, 64, 79, 95, 119, 120,
//	                                                                                  NoSchedule otherwise
//	application Xid (13, 31, 43, 45,   Healthy    none (logged)
//	  68, 109)
//	row remapping failure              Unhealthy  memory=row-remap-failure            NoSchedule
//	volatile double-bit ECC > 0        Unhealthy  memory=double-bit-ecc               NoSchedule
//	retired pages / rows pending       Healthy    memory=remap-pending                NoSchedule
//	HW slowdown, HW/SW thermal         Healthy    slowdown=hw-slowdown,               None
//	  slowdown, HW power brake                      hw-thermal-slowdown, …
//
// A device Xid whose recovery action reads NONE taints nothing. An Xid event
// with GPU and compute instance ids (a MIG device's) hits that MIG device
// only (a static one, or a dynamic partition a prepared claim created); one
// with 0xFFFFFFFF hits the GPU and all its MIG devices. The Xid taint with
// the strongest effect is published (one per device); the message names
// every Xid (nvidiahw.DescribeXid and NVIDIA's action). Xid faults end when
// the GPU's state goes from one a reset clears (lost, or a recovery action
// other than NONE) back to healthy, i.e. after a GPU reset; an Xid for which
// NVML gave no recovery action lasts until the driver restarts. Messages
// join the faults with "; ", e.g. "Xid 48 (Double Bit ECC Error): reset the
// GPU; NVML recovery action: gpu-reset". timeAdded is left to the API
// server. A slice with a tainted device holds at most 64 devices.
//
// Every change of taints or withdrawn devices republishes the pool
// (pluginharness.Plugin.Update); prepare refuses a withdrawn device with
// pluginharness.ErrDeviceWithdrawn. The kubelet plugin's health service is
// on: WatchHealthStatus reports every discovered device (withdrawn ones
// Unhealthy) with its message at start, on every change and every 10 s,
// with a health check timeout of 30 s. The watcher logs "Device fault"
// (gpu, device, xid, description, effect), "Device health" on every change
// and "GPU recovered".
//
// # NVLink fabric and IMEX channels
//
// Discovery reads each GPU's fabric info with GetGpuFabricInfoV (version 2,
// as NVIDIA's driver does). A GPU whose state is completed with status
// success is in a multi-node NVLink domain: its devices (and its MIG
// devices) get nvlinkClusterUUID (the domain's UUID) and nvlinkClique
// ("<clusterUUID>.<cliqueID>", NVIDIA's node-level fabric identity);
// nothing when NVML has no fabric info or the GPU has not finished
// registering. The node's clique (Inventory.NodeFabric) is the one every
// GPU reports; none when they disagree.
//
// The IMEX channels of a clique are multi-node devices that package
// reference/imex (drakit-driver controller --kind gpu) publishes in pool
// IMEXPoolName. The kubelet plugin admits an allocated channel of another
// pool (pluginharness.PoolAdmitter) only when the pool is its own clique's
// and /dev/nvidia-caps-imex-channels/channel<N> exists below the driver
// root (ErrWrongClique otherwise); prepare then injects that device node
// through CDI, with DRAKIT_DEVICE_CHANNEL_<N>=channel<N>.
//
// # Simulated nodes
//
// NodeResources is what the driver publishes for the GPUs a Discoverer
// reports; reference/simulate uses it to publish the pools of simulated
// nodes, with a Discoverer of its own and the names of ArchitectureName,
// BrandName and MIGProfileName.
//
// # Errors
//
// HandleError logs recoverable background errors (kubeletplugin.ErrRecoverable,
// e.g. a rejected ResourceSlice) and stops Run with any other error as cause.
package driver
