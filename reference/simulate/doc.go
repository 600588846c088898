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
// Simulated pools select their node with a nodeSelector on metadata.name
// (nodeName needs a Node owner, and the garbage collector deletes slices
// whose owner does not exist); Run refuses names of existing Nodes, waits
// until the API server holds exactly the published slices and deletes them
// when it stops unless Config.Keep is set.
package simulate
