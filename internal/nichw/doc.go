// Package nichw holds facts of real network adapters and their Linux
// drivers that drakit deals with from two sides: the emulator reproduces
// them (the PCI functions, netdevs and RDMA devices it renders, the virtual
// functions it creates) and drivers or the kit read them back. Each fact is
// stated once, here, with where it comes from, so that neither side
// imports the other's internals (internal/nvidiahw is the same for NVIDIA
// GPUs).
//
// It holds the PCI identities of the adapters the emulator models (vendor,
// physical and virtual function device ids, class), what the kernel drivers
// of those adapters name and bind (mlx5_core, ice, iavf; mlx5_<N> RDMA
// devices), the character devices of the RDMA verbs interface
// (/dev/infiniband/uverbs<N>), the SR-IOV routing-id arithmetic of the PCIe
// specification (VFAddress), and the interface names systemd-udevd's
// "path" naming scheme gives PCI network functions (PathName).
package nichw
