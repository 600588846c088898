// Package partitions holds the steps of KEP-4815, partitionable devices
// (features/kep-4815-partitionable-devices): claims for partitions of a
// device and for the whole device beside them, checked against the
// counters the driver's slices declare, the partitions a container sees
// and the ones the driver creates and removes on the hardware.
package partitions
