// Package platform is the part of a node profile that every device hangs
// from: the NUMA nodes and their CPUs, the PCIe root complexes (host
// bridges) and switches, and the bus numbering of the PCI endpoints placed
// on them (a GPU, a NIC's physical function, a later kind of device).
//
// It holds the YAML types of spec.numaNodes and spec.rootComplexes, the
// Placement every endpoint carries (spec.gpus[*].pcie, spec.nics[*].pcie),
// PCI addresses, the Hex number type of PCI ids, domains and buses, and the
// kernel's CPU list and mask formats. It validates them with the profile's
// field paths: ValidateNUMANodes and ValidateRootComplexes check the tree,
// a Placer checks each endpoint's placement (its root complex and switch
// exist, its bus is free and inside its parent's range) and, once every
// kind of device has been placed, the bus ranges of all root ports
// together (ValidateBusRanges). DefaultNUMANodes fills a node's SLIT row
// and socket.
//
// Contract: the package knows no kind of device. A device kind (packages
// emulator/gpu, emulator/nic) places its endpoints through a Placer and
// names itself in the messages ("bus of another GPU"); package
// emulator/profile composes the kinds into one document and resolves the
// PCIe tree (profile.Topology). Nothing here imports a device kind.
package platform
