// Package profile is the emulator's hardware model: one node's NVIDIA driver,
// NUMA nodes, PCIe root complexes and switches, and the GPUs and SR-IOV NICs
// placed on them, loaded from a strict, versioned YAML document.
//
// The package is the document and composes its parts: the shared tree every
// device hangs from (NUMA nodes, root complexes, switches, placements and
// bus numbering) is package emulator/platform; each kind of device is a
// package of its own with its schema, catalogue, defaults and validation,
// emulator/gpu (GPUs, MIG) and emulator/nic (SR-IOV NICs). Here are the
// document (Profile, Spec, Driver), Parse, Load, LoadFile, the built-in
// profiles, Default and Validate, which call into the parts in a fixed
// order, and Topology, which resolves the PCIe tree with every kind placed.
//
// # Document
//
//	apiVersion: emulator.drakit.dev/v1alpha1
//	kind: NodeProfile
//	metadata:
//	  name: dgx-h100                 # DNS label; default uuidSeed
//	spec:
//	  uuidSeed: dgx-h100             # optional
//	  driver: {driverVersion: 570.172.08, cudaDriverVersion: 12080}
//	  numaNodes:
//	  - {id: 0, cpulist: 0-55,112-167, distances: [10, 21], socket: 0, memory: 1Ti} # memory: node0/meminfo
//	  rootComplexes:                 # PCIe host bridges, /sys/devices/pci<domain>:<bus>
//	  - name: socket0
//	    domain: 0x0000
//	    bus: 0x00
//	    numaNode: 0                  # unset: no NUMA affinity (numa_node -1)
//	    switches: [{name: sw0, bus: 0x16}]
//	  gpus:
//	  - model: H100-80GB-HBM3        # catalogue entry; explicit fields override it
//	    minor: 0                     # /dev/nvidia0
//	    uuid: GPU-…                  # optional; derived from uuidSeed otherwise
//	    pcie: {rootComplex: socket0, switch: sw0, bus: 0x18}
//	    mig:                         # optional; MIG-capable catalogue models only
//	      mode: enabled              # enabled|disabled; default from layout
//	      layout: all-balanced       # a mig-parted name (MIGTable.LayoutNames), or:
//	      instances:                 # explicit GPU instances
//	      - profile: 2g.10gb         # GI profile name of the model
//	        placement: 0             # start memory slice, one of the profile's placements
//	        computeInstances:        # default: one CI spanning the GI
//	        - {profile: 1c.2g.10gb, placement: 0}
//	  nics:                          # network adapters (SR-IOV PFs), placed like GPUs
//	  - model: ConnectX-7            # NIC catalogue entry; explicit fields override it
//	    pcie: {rootComplex: socket0, switch: sw0, bus: 0x19}
//	    interface: enp25s0np0        # optional; systemd's path name by default
//	    mac: 02:…                    # optional; derived from uuidSeed otherwise
//	    mtu: 1500                    # optional
//	    link: up                     # up|down, optional
//	    # model fields: vendorID deviceID subsystemVendorID subsystemDeviceID
//	    # driver (mlx5_core|ice) rdma speedMbps totalVFs vfDeviceID vfOffset vfStride
//
// Numbers that are conventionally hex (PCI ids, domains, buses) may be written
// 0x18, "0x18" or 24 and are written back as "0x…" strings (platform.Hex). Sizes are
// Kubernetes quantities of bytes (85520809984 or 81559Mi).
//
// # Parsing, defaulting, validation
//
// Parse is strict (internal/strictyaml): a second YAML document in the file
// (with its line), duplicate keys, unknown fields (case-sensitive) and values
// of the wrong type are errors, the last two with field paths. Default fills unset fields
// and documents each default (driver 570.172.08 / CUDA 12.8, SLIT distances
// 10/20, socket = node id, GPU fields from the catalogue model, UUIDs derived
// with gpu.DeriveUUID). Validate returns a field.ErrorList naming every problem by
// path ("spec.gpus[3].minor: Duplicate value: 2: also spec.gpus[1].minor"):
// duplicate names, minors, UUIDs and buses, unknown models, references to
// NUMA nodes, root complexes or switches that do not exist, zero or
// fractional sizes, minors above 254, buses above 0xff or outside their
// parent's bus range, overlapping switch bus ranges and CPUs in two NUMA
// nodes. Load, LoadFile and Builtin do all three; every content error
// matches errors.Is(err, ErrInvalid), and field problems come as one
// *ValidationError listing them all. The rules of the tree and of each kind
// of device are documented with their packages (emulator/platform,
// emulator/gpu with MIG, emulator/nic with SR-IOV).
//
// # PCIe tree
//
// Topology resolves a valid profile into the tree the renderer writes. Each
// switch and each GPU or NIC placed without a switch hangs off its own root port
// <domain>:<root bus>:<n>.0, n = 1, 2, … in order of the buses behind the
// ports. A switch's upstream port is <bus>:00.0; its downstream ports sit on
// its internal bus <bus+1> with device numbers 0, 1, … in order of their
// devices' buses; every device is function 0 of its bus. GPUs are listed in
// PCI address order, which is NVML's enumeration order, and so are NICs.
//
// # Built-in profiles and the catalogue
//
// Builtin and BuiltinNames serve the embedded profiles under builtin/:
// dgx-a100-mig is eight A100-SXM4-40GB on two NUMA nodes, the four of socket 0
// whole, three of socket 1 in MIG mode without instances and one with the
// all-balanced layout (the node make conformance renders), and eight
// ConnectX-6, two behind each of the four PCIe switches with two GPUs, as on
// a DGX A100; dgx-h100 is eight H100 80GB HBM3 GPUs on two NUMA nodes, two
// root complexes with two PCIe switches each, and eight ConnectX-7, one
// beside each GPU behind its switch; mixed-mig has two A100-SXM4-40GB with static
// MIG layouts, two H100 with MIG enabled and no instances, and two H200 with
// MIG disabled. gpu.Models lists the GPU catalogue (A100-SXM4-40GB,
// A100-SXM4-80GB, H100-80GB-HBM3, H200-141GB-HBM3e) with the values real
// boards report (package emulator/gpu).
//
// The model is meant to grow: later profile versions add NVLink/NVSwitch
// fabrics and other accelerators on the same root complexes and NUMA nodes.
// A new kind of device is a package beside emulator/gpu and emulator/nic
// that places its endpoints through a platform.Placer; this package adds
// its list to Spec, Default, Validate and Topology.
package profile
