// Package nic is the network adapter kind of a node profile: the schema of
// spec.nics[*] (NIC), the NIC catalogue, and the defaulting and validation
// of the NICs.
//
// A NIC is a single-function PCI device, its SR-IOV physical function. Its
// model (Models: ConnectX-6, ConnectX-7, E810-C; real PCI ids from
// internal/nichw) gives the PCI ids, the kernel driver, RDMA, speed and
// SR-IOV geometry (sriov_totalvfs, VF device id, offset, stride); per NIC
// come the interface name (default systemd's path name,
// en[P<domain>]p<bus>s0np0, bus in decimal), the MAC (default DeriveMAC:
// 02 then five bytes of SHA-256 of seed and address), MTU (1500) and link
// state (up). NICs share the bus numbering, root ports and switches with
// the GPUs, so a GPU and a NIC behind one switch have the same pcieRoot
// and NUMA node. Validate also rejects unknown models and drivers, RDMA
// other than mlx5_core's, duplicate or invalid interface names (IFNAMSIZ)
// and MACs (unicast, lower case), MTUs outside 68..9702, SR-IOV without VF
// device id, offset or stride, and VFs that would leave the PF's bus.
//
// Contract: Default and Validate work on one list of NICs with the
// profile's field paths (spec.nics[i]…); the document around them, the
// seed and the root complexes come from the caller (package
// emulator/profile). A NIC is placed in the PCIe tree through the caller's
// platform.Placer, which the other kinds of device share. The package
// imports no other device kind.
package nic
