// Package nodeselection holds the steps of devices that are not local to
// one node (KEP-4815's per-device node selection, features tagged
// @multi-node): what the API server accepts as a slice's and a device's
// node selection, how the scheduler allocates a device that names its own
// nodes, and a device of the driver that several nodes share, used by a
// pod on each of them.
package nodeselection
