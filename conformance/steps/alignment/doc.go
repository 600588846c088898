// Package alignment holds the steps of PCIe alignment across drivers
// (features' alignment.feature): a device of the driver claimed together
// with a device of another driver (a PCIe root peer: the GPU beside a NIC)
// under one matchAttribute constraint on a standard attribute, checked
// against the node's PCI topology in sysfs.
package alignment
