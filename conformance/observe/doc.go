// Package observe compares what a container saw with what was allocated to
// its pod: the report of drakit-probe from inside the container
// (drakit.dev/drakit/conformance/probe) on one side, the devices the API
// server allocated to the pod's claims, joined with their ResourceSlice
// entries (Device), on the other.
//
// Contracts: every check is a pure function of its arguments. It reads no
// cluster, node or file (CDIEditsOf works on the CDI cache it is given),
// changes none of its arguments, and trusts neither side: a device that is
// allocated and not seen is a finding, and so is a device that is seen and
// not allocated. A check returns its findings, one sentence each, naming
// the pod (or claim) first and the devices by pool/device ID and UUID, for
// example
//
//	pod p: allocated device node/gpu-2 (claim c, uuid GPU-2) is not visible through NVML in the container (NVML lists no GPUs)
//
// No finding (a nil or empty slice) means the container saw exactly what
// was allocated, but for the NVML checks of a container in which NVML
// could not be loaded (NVMLUnavailable): they cannot judge it, and their
// callers must say so rather than pass. Callers turn findings into a
// step's error; observe never fails or skips a scenario itself.
//
// Attribute and capacity names are spelled as the kit's configuration
// spells them: a bare name ("uuid") is in the driver's domain, a qualified
// one ("resource.kubernetes.io/numaNode") names its domain.
//
// The package depends on the probe's report format and the DRA API types
// only; it must not import the conformance kit, the emulator or the
// reference driver, so that the checks judge any driver, and the emulator
// by the same rules.
package observe
