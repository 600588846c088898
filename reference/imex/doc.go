// Package imex is the reference GPU driver's cluster-level IMEX channel
// controller: it publishes the IMEX channels of every multi-node NVLink
// clique as multi-node devices, which a claim shared by pods on several
// nodes of the clique can allocate together.
//
// It watches the driver's node-local ResourceSlices (those the kubelet
// plugins of driver gpu.drakit.dev publish, spec.nodeName set) and groups
// their nodes by the nvlinkClique attribute of their GPUs ("<cluster
// UUID>.<clique ID>"; a node counts for the clique of its first GPU that
// has one). For each clique it publishes one pool, named
// driver.IMEXPoolName (imex-<cliqueID>-<first 8 characters of the cluster
// UUID>), whose pool-wide nodeSelector matches exactly the clique's nodes
// (one term, kubernetes.io/hostname In [...]: the API takes a single term,
// and a metadata.name field selector with one value only), with devices channel-0 .. channel-<N-1>
// (Config.Channels) carrying the attributes type "imex-channel", channel
// (int) and nvlinkClique. A clique that loses its last node loses its pool;
// nodes joining or leaving change the pool's nodeSelector (a new pool
// generation).
//
// Publishing goes through k8s.io/dynamic-resource-allocation/resourceslice's
// controller with the driver's IMEX DeviceClass (Config.DeviceClass,
// cluster-scoped, created by the driver's deployment) as the owner of every
// slice: deleting the DeviceClass at uninstall garbage-collects them, and
// the controller, on start, takes over the non-node slices of the driver
// (spec.nodeName empty) and removes those of cliques that no longer exist.
// The kubelet plugin of each node prepares an allocated channel of its own
// clique by injecting /dev/nvidia-caps-imex-channels/channel<N>
// (driver.AdmitPool).
package imex
