// Package tpudriver is drakit's reference DRA driver for TPU-like
// accelerators (driver name tpu.drakit.dev): a kubelet plugin per node and
// a cluster-level controller for multi-host sub-slices. It runs on the
// emulator's hosts (emulator/tpu) exactly as on a node that shows chips the
// same way, and never imports the emulator.
//
// # Discovery (kubelet plugin)
//
// Through the host root (HostRoot: "/" on a real node, the emulator root
// otherwise) the plugin finds the chips as the upstream driver
// (kubernetes-sigs/dra-driver-google-tpu) does: every
// sys/kernel/iommu_groups/<g>/devices/<bdf> with vendor 0x1ae0 and a device
// id of a known generation (internal/tpuhw); accel/accel<N> below it is the
// chip's index on the host. The host's generation, slice and worker id come
// from its tpu-env (what a GCE metadata server serves as
// instance/attributes/tpu-env; Config.TPUEnvFile), and each chip's torus
// coordinate from the host tiling of internal/tpuhw.Slice.
//
// # What it publishes (the fabric contract)
//
// The node's pool (named after the node) has chip-<index> per chip with the
// attributes type "chip", uuid (TPU-<node>-<index>), generation, slice,
// topology, chipBounds, x, y, z, workerID and index in the driver's
// domain, and resource.kubernetes.io/pcieRoot. DeviceClass tpu.drakit.dev selects them.
//
// The controller (RunController, one replica per cluster) reads the node
// pools, assembles each multi-host slice from its hosts' chips, and
// publishes the pool slice-<slice name>: devices sub-<shape>-<x>-<y>-<z>
// (origin) for every host-aligned placement (tpuhw.Bounds.Placements,
// wrapping where the torus wraps) of each configured shape (default 2x2x2,
// 2x2x4 and the full topology; shapes that do not fit the slice are left
// out, so such a claim stays pending) whose hosts all have a node pool,
// with attributes type "subslice", uuid (TPU-SUB-<slice>-<device>),
// shape, slice, topology, generation, x, y, z, chips and hosts, and
// perDeviceNodeSelection: each device's
// nodeSelector selects exactly the nodes of its hosts: one term,
// kubernetes.io/hostname In [nodes] (the DRA allocator refuses a device
// node selector of several terms, and the API a metadata.name field
// selector of several values; so the hostname label must be the node
// name, as the kubelet sets it by default).
// DeviceClass subslice.tpu.drakit.dev selects them.
//
// Two seams build the same pools without a node or an API server, for
// reference/simulate: NodeResources is the node plugin's pool for a host
// given its tpu-env and its chips' PCIe roots (what discovery reads from
// sysfs), and SubslicePools is the controller's planner from the driver's
// node ResourceSlices.
//
// # Exclusivity and the limits it implies
//
// A sub-slice is whole hosts, so overlapping sub-slices share a host. Each
// host has a counter host-<worker> of value 1 that every sub-slice holding
// it consumes, so the allocator never gives out two overlapping
// sub-slices. Counters go in counter sets of whole host z-planes,
// planes-<first>-<last>, as many planes as fit in 32 counters. A device may
// consume from 2 counter sets and a slice may have 8, so: a plane of hosts
// is at most 32 hosts; a slice has at most 8 counter sets (256 hosts when
// planes fill them); and a sub-slice may span the host planes of at most
// two sets. A slice or shape that breaks one of these is not published and
// the controller logs ErrLimits naming it. Devices go in ResourceSlices of
// at most 64 (the limit for devices that consume counters), the counter
// sets in a slice of their own. Shapes smaller than a host are refused:
// a host's own chips are its node pool's devices. The node-local chips and
// the sub-slices are different pools, which counters cannot span: a
// cluster should hand out a slice's hosts through one class or the other.
//
// # Prepare
//
// A chip claim gets /dev/accel<N> per chip (and /dev/vfio/<group> with
// /dev/vfio/vfio for vfio-bound generations) through CDI, and
// TPU_VISIBLE_CHIPS; with every chip of the host also the host as a
// one-host slice (TPU_TOPOLOGY the chip bounds, TPU_WORKER_ID 0, ...). A
// sub-slice claim (admitted through pluginharness.PoolAdmitter when it holds
// chips of this host) gets this host's chips of the sub-slice and
// the environment of a TPU runtime: TPU_TOPOLOGY (the shape),
// TPU_WORKER_ID (this host's index among the sub-slice's hosts, by host box
// from the origin, x then y then z), TPU_WORKER_HOSTNAMES (the nodes of
// those hosts in that order, read from the node pools' workerID
// attributes), TPU_CHIPS_PER_HOST_BOUNDS, TPU_HOST_BOUNDS,
// TPU_VISIBLE_CHIPS, TPU_ACCELERATOR_TYPE and TPU_SKIP_MDS_QUERY. Prepare
// changes no hardware; the checkpoint (pluginharness) records each device's
// chips and environment.
package tpudriver
