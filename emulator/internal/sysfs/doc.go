// Package sysfs describes the entries the kernel shows for a device, as
// lists of Entry values (files, symbolic links, character devices) with
// paths relative to an emulator root, so that the renderer (which writes a
// whole new tree) and the run-time changes of package emulator/sriov and
// emulator/fault (which change a live tree) write the same files in the
// same formats: a PCI function (PCIFunction), a network interface
// (NetDevice, LinkFiles) and an RDMA device with its verbs character device
// (RDMADevice). Apply writes entries into a live root idempotently; the
// layout is docs/architecture.md's.
package sysfs
