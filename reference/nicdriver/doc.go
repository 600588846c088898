// Package nicdriver is drakit's reference NIC DRA driver, nic.drakit.dev: a
// kubelet plugin that discovers SR-IOV network adapters in sysfs, publishes
// their PFs' bandwidth as consumable capacity (KEP-5075) and their VFs as
// devices, creates VFs when a claim needs one, and reports each prepared
// device in the claim's status (KEP-4817). It is built on
// reference/pluginharness (checkpoint, prepare and unprepare rules, CDI
// specs, the kubelet plugin) like the GPU driver, and ships in the same
// binary and image (cmd/drakit-driver --kind nic).
//
// # Discovery
//
// Discovery reads sysfs below Config.SysfsRoot (<HostRoot>/sys; "/sys" on a
// real node, the emulator's root otherwise) once at start, nothing else: no
// netlink, no ioctl. Every entry of bus/pci/devices whose class file reads
// 0x0200xx (Ethernet controller), that has no physfn link (not a VF) and
// whose sriov_totalvfs is positive is a PF. Of a PF the driver reads vendor,
// device, sriov_vf_device, sriov_totalvfs, sriov_numvfs, sriov_offset and
// sriov_stride (where VF i will sit: routing ID PF + offset + i·stride),
// sriov_drivers_autoprobe and the driver link; its first netdev net/<if>
// (address, mtu, speed in Mb/s, operstate); its first RDMA device
// infiniband/<dev> and user verbs device infiniband_verbs/uverbs<N> with its
// dev numbers; the VFs that exist (virtfn<i> links). PCIe root and NUMA
// node come from k8s.io/dynamic-resource-allocation/deviceattribute over the
// same sysfs root (the bus/pci/devices links must be relative, as the
// kernel makes them). Content the kernel never writes (a class, id or count
// that does not parse, more VFs than sriov_totalvfs) stops the driver with
// an error naming the file; what a PF may lack (netdev, speed: a link that
// is down reads -1, NUMA affinity, PCIe root, RDMA) is left out of what is
// published.
//
// # Published resources
//
// One pool named after the node, in slices of at most 128 devices (no
// device has taints, counters or list attributes). Per PF, in BDF order:
//
//   - nic-<domain>-<bus>-<dev>-<fn> (nic-0000-3b-00-0), the PF's bandwidth
//     shares, when its link speed is known. Attributes
//     resource.kubernetes.io/pciBusID, pcieRoot, numaNode (scalar; left out
//     without NUMA affinity) and in the driver's domain type "pf",
//     vendorID, deviceID ("0x15b3" as sysfs writes them), interfaceName,
//     macAddress, mtu, linkSpeed (Mb/s), rdma, rdmaDevice, totalVFs.
//     allowMultipleAllocations: true; capacity bandwidth = the link speed
//     in bits per second (100G for a 100 Gb/s link) with requestPolicy
//     default 1G (at most the link), validRange min = step, max = the link,
//     step the largest of 1G, 100M and 1M that the link is a multiple of
//     twice or more (a link slower than 2 Mb/s gets no policy). A request
//     is rounded up to the next step; one without a bandwidth request takes
//     the default.
//   - <PF device>-vf<i>, i < the number of VFs published for the PF:
//     Config.VFsPerPF (default 4), at most sriov_totalvfs, or, when the PF
//     has VFs already, as many of those as VFsPerPF allows. Attributes
//     pciBusID (the VF's, from its virtfn link or computed from offset and
//     stride; left out when neither is known), the PF's pcieRoot and
//     numaNode, type "vf", vendorID, deviceID (sriov_vf_device), vfIndex,
//     pfDevice, pfPCIBusID, pfInterfaceName, rdma (whether the VF has, or
//     will get, an RDMA device: the PF has one and its driver probes new
//     VFs). Not shared.
//
// The deployment's DeviceClasses select them by type: nic.drakit.dev the
// PF shares, vf.nic.drakit.dev the VFs (reference/deploy).
//
// # VFs: prepare and unprepare
//
// The harness prepares a claim's VFs (vfRecord in its checkpoint). For each
// VF of the claim: when its PF has no VFs (sriov_numvfs reads 0), the
// driver records that it creates them (owned), checkpoints the claim as
// incomplete, writes the published count to sriov_numvfs (open O_TRUNC, one
// write, as `echo N >` does) and waits, at most Config.VFTimeout, until
// sriov_numvfs reads it back and exactly virtfn0…virtfn<N-1> exist. A
// kernel refuses an invalid count at the write; drakit's emulator applies a
// write shortly after and puts the old count back when it is invalid, which
// the driver sees as sriov_numvfs reading another count: it writes the
// count again (the emulator can also lose a write made while it finishes
// applying the previous one), three times in all, then fails with the
// refusal, without waiting for the timeout. A PF that already
// has VFs is never written to (the kernel allows a new non-zero count only
// after 0): a VF beyond its count is an error, and its VFs are owned only
// when another prepared claim's records say the driver created them. Then
// the driver waits for the VF itself: its virtfn link and, when the PF's
// driver probes new VFs (sriov_drivers_autoprobe 1 and a driver link), its
// netdev and, for a PF with RDMA, its user verbs device; and records the
// VF's address, interface name, MAC and uverbs node. The claim is complete
// once every VF is recorded.
//
// Unprepare of a claim writes 0 to sriov_numvfs of each PF whose VFs it
// owns and that no other checkpointed claim uses, and waits until the VFs
// are gone (their virtfn links, bus/pci/devices entries and directories);
// the driver only ever goes 0→N and N→0. A PF that is gone, or
// already has no VFs, is left as it is. A restarted driver undoes every
// claim still marked incomplete the same way (its records say which PFs it
// wrote), so a crash between the write and the end of the prepare leaves no
// VFs behind once the driver starts again, unless another claim uses them;
// the kubelet retries the prepare. Which claims use a PF's VFs comes from
// the harness's checkpoint, which the driver reads (never writes) before
// the harness starts. Admin access to a VF is refused: it exists only while
// a claim uses it.
//
// A VF's CDI device (in the harness's per-claim spec, kind
// k8s.<driver>/claim) sets DRAKIT_DEVICE_<DEVICE>_PCI_ADDRESS and
// _PF_PCI_ADDRESS, _INTERFACE when it has a netdev, and for an RDMA VF
// _RDMA_DEVICE and the node /dev/infiniband/uverbs<N> (host path below
// <HostRoot>/dev, type c with the major and minor sysfs gives, so the
// runtime need not stat the host path). An Ethernet VF gets no device node.
// <DEVICE> is the device name in upper case with '-' as '_'.
//
// # PF shares: prepare and unprepare
//
// A PF share changes nothing on the NIC. The harness cannot hold shares
// (it records one claim per device and refuses a device prepared for
// another claim), so the plugin prepares them beside it: per claim one CDI
// spec <CDIDir>/k8s.<driver>-share_<claimUID>.json, kind
// k8s.<driver>/share, with one CDI device <claimUID>-<device>-<shareID>
// per share, setting DRAKIT_DEVICE_<DEVICE>_INTERFACE (the PF's),
// _PCI_ADDRESS, _SHARE_ID and _BANDWIDTH (what the allocation's
// consumedCapacity says the share takes; none with admin access); and a
// record in <KubeletPluginDir>/shares.json (versioned, checksummed, written
// atomically like the harness's checkpoint). The kubelet gets the share's
// ID back with its device. A share without a shareID, or without consumed
// bandwidth (unless it has admin access), is refused, and so are shares
// that would take more than the link from a PF together with those other
// claims prepared on the node: the driver is the scheduler's last line of
// defence. The spec is written before the record and removed by its name
// at unprepare, also when no record knows it. Two shares of one PF given to
// one container set the same variables; one of them wins.
//
// A claim is prepared VFs first, then shares; when its shares fail its VFs
// are undone. Both calls are idempotent, as the harness's.
//
// # Device status
//
// With Config.DeviceStatus (default on) prepare writes the claim's
// status.devices entries of exactly its devices of this driver and pool,
// keyed by driver, pool, device and shareID: condition Ready (True, reason
// Prepared, observedGeneration the claim's), data (a JSON object: type,
// pciAddress, pfPCIAddress, vfIndex, rdmaDevice, uverbsDevice for a VF;
// type, pciAddress, bandwidth, linkSpeed for a share) and networkData
// (interfaceName and hardwareAddress of the VF's netdev or the PF's, ips
// only from Config.DeviceIPs: the driver assigns no addresses). It writes
// them with server-side apply on the status subresource, field manager
// <driver>, the claim's UID in the request (a claim replaced by another of
// the same name is not written), so other drivers' entries stay; conflicts
// and server timeouts are retried. A status write that still fails fails
// the claim's prepare with the API's error, the devices stay prepared and
// the kubelet's retry writes it again. Unprepare applies no entries, which
// removes the driver's (a failure is logged: the API server drops the
// entries when the claim is deallocated). The API server allows the write
// only to a service account of the claim's node that may
// associated-node:patch resourceclaims/driver for this driver's name
// (DRAResourceClaimGranularStatusAuthorization), besides patch on
// resourceclaims/status: reference/deploy grants exactly that.
//
// # Errors
//
// HandleError is the harness's: recoverable errors are logged, any other
// stops Run with it as cause.
package nicdriver
