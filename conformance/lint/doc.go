// Package lint judges what a DRA driver publishes in its ResourceSlices
// against rules the API server does not enforce but the scheduler, the
// kubelet and users rely on. Each rule is a pure function of the driver's
// slices (and the cluster's Nodes, or the node's sysfs) that returns
// findings; a finding cites its rule and the basis of the part of the rule
// it broke (Finding.Basis), and names the pool, the slice and the device it
// is about.
//
// A part of a rule that no KEP, API field or component behaviour requires
// (a convention, however common) makes warnings, not findings
// (Finding.Warning, a Basis starting with NoBasis): the kit reports them as
// advice and never counts them in the verdict.
//
// The rules (Rules lists them by name), each part with its basis:
//
//   - pools: the slices of a pool at its newest generation agree on
//     resourceSliceCount and are that many (KEP-4381: the scheduler
//     allocates only from a complete pool); a device name appears once in a
//     pool (KEP-4381: a duplicate makes the pool invalid); all slices of a
//     pool select the same nodes (KEP-4381: the scheduler counts a pool's
//     slices per node). Warning: all slices of a pool have one owner (the
//     kubelet plugin library's convention).
//   - standard-attributes: resource.kubernetes.io/pcieRoot
//     "pci<domain>:<bus>", pciBusID "<domain>:<bus>:<device>.<function>" and
//     numaNode, a non-negative int or a non-empty list of them, have the
//     standard types and formats (KEP-4381, KEP-6072, deviceattribute).
//     Warning: any other name in resource.kubernetes.io (the API allows
//     it; Kubernetes defines none).
//   - qualified-names, a warning only: attribute and capacity names are in
//     the driver's own domain or the standard one, never another driver's
//     (the API lets a third party's domain name an attribute).
//   - identity: the identity attribute the driver declares names exactly one
//     device (the declaration: the kit selects devices by it).
//   - node-selection: a slice for one node names a Node that exists
//     (KEP-4381: spec.nodeName is the node the devices are on). Warning: it
//     is owned by that Node, as the kubelet plugin library publishes it.
//   - counters: every counter a device consumes is in a counter set its pool
//     declares (KEP-4815: else the pool is invalid), and no device alone
//     consumes more than its set holds (KEP-4815: the scheduler could never
//     allocate it).
//   - inventory: the devices of a kind that names its PCI vendor and class
//     are exactly the node's PCI functions of that vendor and class (by the
//     standard pciBusID attribute), with the node's PCIe root (the
//     declaration, the node's sysfs, KEP-4381's standard attributes). It
//     reads the node's sysfs (the kernel's layout; drakit's emulated node
//     renders one).
//   - numa-node: those devices' numaNode is their PCI function's sysfs
//     numa_node (the first element of a list), and absent where it is -1;
//     their pcieRoot is in their pciBusID's PCI domain (KEP-6072). It reads
//     the node's sysfs as inventory does.
//
// Rules never fetch anything: the caller gathers the slices (all of the
// driver's, the newest generation per pool counts as the scheduler counts
// it) and the Nodes.
package lint
