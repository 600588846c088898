// Package profile is the emulator's hardware model: one node's NVIDIA driver,
// NUMA nodes, PCIe root complexes and switches, and the GPUs and SR-IOV NICs
// placed on them, loaded from a strict, versioned YAML document.
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
//	  - {id: 0, cpulist: 0-55,112-167, distances: [10, 21], socket: 0}
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
// 0x18, "0x18" or 24 and are written back as "0x…" strings (Hex). Sizes are
// Kubernetes quantities of bytes (85520809984 or 81559Mi).
//
// # Parsing, defaulting, validation
//
// Parse is strict (internal/strictyaml): a second YAML document in the file
// (with its line), duplicate keys, unknown fields (case-sensitive) and values
// of the wrong type are errors, the last two with field paths. Default fills unset fields
// and documents each default (driver 570.172.08 / CUDA 12.8, SLIT distances
// 10/20, socket = node id, GPU fields from the catalogue model, UUIDs derived
// with DeriveUUID). Validate returns a field.ErrorList naming every problem by
// path ("spec.gpus[3].minor: Duplicate value: 2: also spec.gpus[1].minor"):
// duplicate names, minors, UUIDs and buses, unknown models, references to
// NUMA nodes, root complexes or switches that do not exist, zero or
// fractional sizes, minors above 254, buses above 0xff or outside their
// parent's bus range, overlapping switch bus ranges and CPUs in two NUMA
// nodes. Load, LoadFile and Builtin do all three; every content error
// matches errors.Is(err, ErrInvalid), and field problems come as one
// *ValidationError listing them all.
//
// # NICs
//
// A NIC is a single-function PCI device, its SR-IOV physical function
// (nic.go). Its model (NICModels: ConnectX-6, ConnectX-7, E810-C; real PCI
// ids from internal/nichw) gives the PCI ids, the kernel driver, RDMA,
// speed and SR-IOV geometry (sriov_totalvfs, VF device id, offset,
// stride); per NIC come the interface name (default systemd's path name,
// en[P<domain>]p<bus>s0np0, bus in decimal), the MAC (default DeriveMAC:
// 02 then five bytes of SHA-256 of seed and address), MTU (1500) and link
// state (up). NICs share the bus numbering, root ports and switches with
// the GPUs, so a GPU and a NIC behind one switch have the same pcieRoot
// and NUMA node. Validate (nic_validate.go) also rejects unknown models and
// drivers, RDMA other than mlx5_core's, duplicate or invalid interface
// names (IFNAMSIZ) and MACs (unicast, lower case), MTUs outside 68..9702,
// SR-IOV without VF device id, offset or stride, and VFs that would leave
// the PF's bus.
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
// # MIG
//
// LookupMIGTable gives a model's MIG GPU-instance profiles (real driver
// profile IDs, NVML indexes, slices, memory, engines, placements) and derives
// its compute-instance profiles; mig.go names the source of every value and
// marks what is unverified. A static layout resolves (GPU.MIGLayout) to GPU
// instances with NVML's ids: the GI id is a function of the placement (GIID:
// 0 for 0:8, 1 and 2 for 4:4 and 0:4, 3..6 for the quarters, 7..14 for the
// eighths, upper half first), CI ids count 0, 1, … in listed order. Named
// layouts place GIs as the driver does without a placement: largest first,
// each at the highest free start. Validate rejects MIG on GPUs that are not
// MIG capable or have no MIG table, unknown profiles and layouts, placements
// a profile does not have, overlaps, more GIs of a profile than its
// instanceCount, more than 7 compute slices and more than 7 MIG devices.
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
// MIG disabled. Models lists the GPU catalogue (A100-SXM4-40GB,
// A100-SXM4-80GB, H100-80GB-HBM3, H200-141GB-HBM3e) with the values real
// boards report (catalogue.go marks the unverified ones).
//
// The model is meant to grow: later profile versions add NVLink/NVSwitch
// fabrics and other accelerators on the same root complexes and NUMA nodes.
// Each kind of device keeps its own files (nic.go, nic_catalogue.go,
// nic_validate.go beside the GPU's types.go, catalogue.go, validate.go);
// placement.go holds what all endpoints share.
package profile
