// Package sriov creates and removes the virtual functions (VFs) of a
// rendered root's SR-IOV NICs with the kernel's rules, and watches the
// physical functions' (PFs') sriov_numvfs files for values drivers write.
//
// SetNumVFs(root, pf, n) is a write of n to the PF's sriov_numvfs
// (drivers/pci/iov.c sriov_numvfs_store): n above sriov_totalvfs fails
// with ERANGE; a PF without a bound driver fails with ENOENT; changing a
// non-zero count to another non-zero count fails with EBUSY (write 0
// first); the current count succeeds and changes nothing. 0 → n creates VF
// i (0 ≤ i < n) at the PF's address + sriov_offset + i·sriov_stride
// (nichw.VFAddress), a sibling of the PF below the same bridge: its PCI
// files (vendor of the PF, device sriov_vf_device, the PF's subsystem ids,
// class 0x020000, the PF's NUMA node and CPUs, BAR0 in the PF's SR-IOV
// BAR), physfn → the PF, driver → the VF driver (mlx5_core, iavf),
// /sys/bus/pci/devices/<vf> and drivers/<driver>/<vf>, a netdev named by
// systemd's path scheme (enp12s0f1 for 0000:0c:00.1) with its own MAC
// (DeriveVFMAC from the PF's), MTU 1500, the PF's speed and link state and
// the next interface index, /sys/class/net/<if>, for an RDMA PF an RDMA
// device mlx5_<N> and a verbs device uverbs<N> (lowest free numbers) with
// /dev/infiniband/uverbs<N>, and last the PF's virtfn<i> → the VF. n → 0
// removes them all, virtfn<i> first. sriov_numvfs is written last.
//
// Crash safety without locks: the current count is the number of virtfn
// links; a virtfn link exists only for a VF that is complete (created last,
// removed first), so a reader that sees virtfn<i> sees all of VF i. Every
// step is idempotent (files renamed into place, links replaced, removals of
// what is gone succeed), and SetNumVFs converges the PF on exactly n VFs
// whatever an interrupted call left: it removes the VFs at and above n
// (leftovers included) and re-applies those below. After a crash, write 0
// (or the count again). One writer per PF at a time: the emulator takes no
// lock, as a driver owns its PF.
//
// RemoveVF is a VF gone, a write of 1 to /sys/bus/pci/devices/<vf>/remove:
// the VF's function and everything pointing at it go, its PF's virtfn<i>
// link stays, dangling, and so does the count, as the kernel keeps them
// until SR-IOV is disabled. A dangling virtfn link is nothing but that (a
// VF's link is made last and removed first), so SetNumVFs leaves such a VF
// gone when the same count is written again and clears it with 0.
//
// Watch (Watcher) applies what drivers write into sriov_numvfs, as the
// kernel would: it watches every PF's directory with fsnotify (inotify),
// and on a write reads the value (an empty file, a write still under way,
// is skipped), and calls SetNumVFs. A valid value makes the VFs appear; an
// invalid one (not a number, above sriov_totalvfs, a non-zero change from
// a non-zero count) is logged and the file is restored to the current
// count. A real kernel fails the write(2) itself, with the errno above; a
// write to the emulated file always succeeds, so drivers should, as on real
// kernels, write 0 and wait until the virtfn links are gone before writing a
// new count, then wait until sriov_numvfs reads back the count and the
// virtfn links exist. A value already in the file when Watch starts is
// applied then. A render of the root again (a new sys tree) is picked up.
package sriov
