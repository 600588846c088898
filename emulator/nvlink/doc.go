// Package nvlink describes a node's NVLink fabric in a node profile: the
// links of its GPUs, the NVSwitches on the node and, for a multi-node NVLink
// domain (an NVL72-like rack), the domain the node's GPUs belong to and the
// IMEX channels the node exposes.
//
// The profile package embeds Fabric as spec.nvlink and calls Validate; the
// render package and the NVML shim turn it into what real fabric-attached
// GPUs show (nvmlDeviceGetNvLink*, nvmlDeviceGetGpuFabricInfo[V], the IMEX
// channel devices). Every GPU of a node shares the node's Domain: NVIDIA's
// node-level fabric identity "<clusterUUID>.<cliqueID>" requires it.
package nvlink
