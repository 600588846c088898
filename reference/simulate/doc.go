// Package simulate publishes the reference driver's pools for many
// simulated nodes from one process, for scale tests (drakit driver
// simulate) and the publishing benchmarks (scripts/bench-publish.sh).
//
// A simulated node has the hardware of an emulator profile
// (ProfileInventory: the Inventory that NVML discovery reports on a node
// rendered from the profile, without rendering it or loading NVML;
// ReplicateProfileGPUs for more GPUs per node). Its pool is what the
// reference driver publishes for it, through the driver's own seam: a
// driver.Discoverer per node hands that hardware, with the UUIDs the
// emulator derives from the node's name, to driver.NodeResources. One
// resourceslice controller per node publishes the pool, as the kubelet
// plugin does for a real node. The driver never imports the emulator; this
// package does.
//
// With a cluster profile (Config.ClusterProfile, package
// emulator/clusterprofile) every node has its own hardware, and the pools
// follow the fabric contract (fabric.go): the GPUs of a clique's nodes
// carry nvlinkClusterUUID and nvlinkClique; each clique has an IMEX channel
// pool imex-<cliqueID>-<uuid prefix> selecting its nodes; each TPU host
// publishes its chips (driver tpu.drakit.dev) with torus coordinates, and
// each TPU slice a sub-slice pool slice-<name> (per-device node selection,
// one counter per host so overlapping sub-slices exclude each other).
// These stand in for what the reference drivers' fabric support (the
// NVLink and TPU work) publishes, through the same seam: the pool built by
// driver.NodeResources, extended here. ClusterSlices turns the pools into
// the ResourceSlices a scheduler sees, for the allocator benchmarks.
// Several nodes are selected by the kubernetes.io/hostname label in one
// term: a ResourceSlice's and a device's node selector take one term, and
// matchFields metadata.name takes one value.
//
// Simulated pools select their node with a nodeSelector on metadata.name
// (nodeName needs a Node owner, and the garbage collector deletes slices
// whose owner does not exist); Run refuses names of existing Nodes, waits
// until the API server holds exactly the published slices and deletes them
// when it stops unless Config.Keep is set.
package simulate
