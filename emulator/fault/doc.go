// Package fault injects hardware faults into a rendered emulator root, as
// the kernel would show them. Today: a NIC's link (SetLink), on a physical
// or a virtual function, by its interface name.
//
// Link down is a lost carrier with the interface still administratively up
// (a pulled cable, a peer port down): /sys/class/net/<if>/operstate
// "down", carrier 0, speed -1 (SPEED_UNKNOWN) and duplex unknown, and the
// function's RDMA port 1 state "1: DOWN", phys_state "3: Disabled". Link up
// restores "up", 1, the nominal speed (kept in
// run/drakit-emulator/nic/<address>/speed_mbps, since the speed file reads
// -1 without a link), full duplex, "4: ACTIVE" and "5: LinkUp". Files are
// replaced atomically, one at a time. A VF created afterwards takes its
// PF's link state; a PF's change does not reach existing VFs (each has its
// own link, as with "ip link set <pf> vf <n> state" left at auto on real
// NICs only the PF's carrier moves). Netlink, which drivers such as dranet
// also use, is not emulated.
package fault
