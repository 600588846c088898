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
// lifetime. A GPU whose sysfs entry is missing is still published, without
// the standard attributes the missing entry would have provided.
//
// # Published resources
//
// One pool named after the node, devices gpu-<minor>. Attributes:
// resource.kubernetes.io/pcieRoot, resource.kubernetes.io/pciBusID and
// resource.kubernetes.io/numaNode (scalar form; omitted when sysfs reports
// no NUMA affinity), and in the driver's domain uuid, productName,
// architecture (e.g. "Hopper"), brand, driverVersion, cudaDriverVersion and
// cudaComputeCapability (versions, normalized to semver: 570.172.08 is
// published as 570.172.8), minor and index (ints). Capacity: memory (bytes).
// String values longer than the API's 64-character limit are truncated.
//
// # Prepare and unprepare
//
// PrepareResourceClaims writes one CDI spec per claim into the CDI directory,
// named k8s.<driver>-claim_<claimUID>.json, kind k8s.<driver>/claim, with one
// CDI device <claimUID>-<device> per allocated device of this driver. The
// driver defines no opaque configuration; config entries are ignored, as are
// allocation results of other drivers. A claim whose results name a device
// of another pool or an unknown device, or a device already prepared for
// another claim (unless either claim uses admin access), gets a per-claim
// error and no spec.
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
// # Errors
//
// HandleError logs recoverable background errors (kubeletplugin.ErrRecoverable,
// e.g. a rejected ResourceSlice) and stops Run with any other error as cause.
package driver
