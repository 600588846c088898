// Package probe is the in-pod half of the conformance kit: it records what a
// container actually sees of the accelerator hardware, so that the kit can
// compare it with what the API server says was allocated.
//
// Collect gathers a Report: every character and block device node under the
// container's /dev (path, type, major, minor), the process environment, and
// the GPUs that NVML enumerates through libnvidia-ml.so.1, and the mount
// points of /proc/self/mountinfo with their read-only option. An NVML that
// cannot be loaded or initialized is recorded in Report.NVML.Unavailable,
// any later NVML call that fails in Report.NVML.Error; neither aborts the
// collection: a container without GPU access is a valid observation.
//
// Contract with the kit (docs/architecture.md, "Probe"): cmd/drakit-probe
// prints exactly one line
//
//	DRAKIT-PROBE-REPORT <json>
//
// to stdout (Format), and then, with --hold, waits for SIGTERM or SIGINT and
// exits 0, so that pods are deleted promptly. The kit reads the line back
// from the pod's log with ParseLogs.
//
// The probe reports facts only. It never interprets them: deciding whether a
// device node or a GPU should be visible is the kit's job.
package probe
