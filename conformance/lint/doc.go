// Package lint judges what a DRA driver publishes in its ResourceSlices
// against rules the API server does not enforce but the scheduler, the
// kubelet and users rely on. Each rule is a pure function of the driver's
// slices (and the cluster's Nodes, or the node's sysfs) that returns
// findings; a finding names the rule, the pool, the slice and the device it
// is about.
//
// The rules (Rules lists them by name):
//
//   - pools: the slices of a pool at its newest generation agree on
//     resourceSliceCount and are that many (the pool is complete); a device
//     name appears once in a pool; all slices of a pool have one owner and
//     select the same nodes.
//   - standard-attributes: the resource.kubernetes.io attributes a device
//     publishes are the standard ones, with their types and formats (pcieRoot
//     "pci<domain>:<bus>", pciBusID "<domain>:<bus>:<device>.<function>",
//     numaNode a non-negative int, or a non-empty list of them).
//   - qualified-names: attribute and capacity names are in the driver's own
//     domain or the standard one, never another driver's.
//   - identity: the identity attribute the driver declares names exactly one
//     device in the cluster.
//   - node-selection: a slice for one node names a Node that exists and is
//     owned by that Node, as the kubelet plugin library publishes it.
//   - counters: every counter a device consumes is in a counter set its pool
//     declares, and no device alone consumes more than its set holds (it
//     could never be allocated).
//   - inventory: the devices of a kind that names its PCI vendor and class
//     are exactly the node's PCI functions of that vendor and class (by the
//     standard pciBusID attribute), with the node's PCIe root. It reads the
//     node's sysfs (the kernel's layout; drakit's emulated node renders one).
//   - numa-node: those devices' numaNode is their PCI function's sysfs
//     numa_node (the first element of a list), and absent where it is -1;
//     their pcieRoot is in their pciBusID's PCI domain (KEP-6072). It reads
//     the node's sysfs as inventory does.
//
// Rules never fetch anything: the caller gathers the slices (all of the
// driver's, the newest generation per pool counts as the scheduler counts
// it) and the Nodes.
package lint
