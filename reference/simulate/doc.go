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
// emulator/clusterprofile) every node has its own hardware, and every pool
// is built by the reference drivers' own code (fabric.go), so it is the
// pool those drivers publish: a node's GPUs come through
// driver.NodeResources, with the NVLink fabric ProfileInventory reports
// for them (nvlinkClusterUUID, nvlinkClique once registration completed);
// each clique's IMEX channel pool comes from imex.Resources (the GPU
// driver's IMEX controller); a TPU host's chips come from
// tpudriver.NodeResources, given the tpu-env the emulator renders for the
// host and its chips' PCIe roots; and each TPU slice's sub-slice pool is
// what the TPU driver's controller plans from those chip pools
// (tpudriver.SubslicePools, default shapes: per-host counters grouped by
// z-planes, placements that wrap around ring dimensions). This package
// builds no device of its own. ClusterSlices turns the pools into the
// ResourceSlices a scheduler sees, for the allocator benchmarks.
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
