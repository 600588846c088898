// Package fault injects hardware faults into a rendered emulator root, as
// the kernel would show them: a NIC's link (SetLink), and the health of
// GPUs as the NVIDIA driver reports it through NVML ("drakit emulator
// fault"), their NVLinks included (SetNVLink: a link's state, and the
// fabric health mask of a GPU of a multi-node domain, degraded bandwidth
// while one of its links is down).
//
// # NIC links
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
//
// # GPU faults
//
// Every GPU fault is one nvmlstate.Update of the root's NVML state file
// (flock, reread, change, temporary file, fsync, rename: the fault and event
// records of package nvmlstate), so NVML clients of the root (the emulator's
// libnvidia-ml.so.1) see it at their next call, and clients blocked in
// nvmlEventSetWait wake for its events. A target names a GPU as GPU-<uuid>,
// PCI bus id (NVML's 00000000:1B:00.0 or sysfs' 0000:1b:00.0, either case)
// or minor, or a MIG device as MIG-<uuid> where the fault allows one.
// Errors name the operation and the target: ErrUnknownDevice (listing what
// the root has), ErrMIGTarget (a MIG device for a whole-GPU fault, a GPU for
// LoseMIG), ErrLost (any fault but Reset on a GPU that fell off the bus,
// including a second Lose), ErrInvalid (bad arguments), and
// nvmlstate.ErrNoState for a root without a state file.
//
//   - InjectXid logs an Xid event (nvmlEventTypeXidCriticalError, eventData
//     the Xid unless XidRequest.Data says otherwise; a MIG target's GI and CI
//     ids) and applies the Xid's device effect (XidEffects) to the GPU.
//     Codes outside the catalogue (nvidiahw.Xids) are logged as events only
//     (XidResult.Known false; the CLI warns).
//   - ECC adds single-bit and double-bit errors: volatile and aggregate
//     counts, and an sbe and a dbe event (eventData the count added).
//   - SetThrottle sets a GPU's clocks event (throttle) reasons
//     (nvmlstate.ClocksEventReasons names, ParseClocksEventReasons) and
//     optionally its temperature.
//   - Lose: the GPU falls off the bus = Xid 79.
//   - LoseMIG: an Xid (its GI and CI ids) on the MIG device, then its compute
//     instance goes as nvmlComputeInstanceDestroy would: the ci record, the
//     capability access file and directory, the /dev/nvidia-caps node. The
//     GPU instance stays.
//   - Reset (nvidia-smi -r, or a reseat): volatile ECC counts 0, a pending
//     page retirement applied (one more double-bit page), a pending row
//     remapping applied (one more uncorrectable row), the remap failure
//     cleared, recovery action none, no clocks event reason, the default
//     temperature, and a lost GPU back with its device node (the node Lose
//     moved to run/drakit-emulator/lost, else a new 195:<minor>). Aggregate
//     counts, retired pages, remapped rows and events stay.
//   - List reads every GPU's fault state and the logged events.
//
// Xid device effects (the Xids NVIDIA's catalogue blames on the device;
// application Xids 13, 31, 43, 45, 68 and 109 log the event only). The
// recovery action is NVML's nvmlGpuRecoveryAction_t; a GPU keeps the more
// disruptive of its current one and the new one (none < drain-p2p <
// gpu-reset < drain-and-reset < bus-reset, recover-imex-domain <
// node-reboot < system-reboot) until Reset.
//
//	Xid  name                                 effect                                              recovery action
//	48   Double Bit ECC Error                 DBE volatile+aggregate +1, a dbe event,             gpu-reset
//	                                          a page retirement pending
//	63   ECC page retirement/row remapping    a row remapping pending                             drain-and-reset
//	64   ECC page retirement/row remap failure a row remapping failure                            gpu-reset
//	74   NVLink Error                         -                                                   drain-p2p
//	79   GPU has fallen off the bus           lost (= Lose): not enumerated, GPU_IS_LOST,         node-reboot
//	                                          /dev/nvidia<minor> removed
//	92   High single-bit ECC error rate       SBE volatile+aggregate +10, an sbe event            drain-and-reset
//	94   Contained ECC error                  -                                                   drain-and-reset
//	95   Uncontained ECC error                -                                                   gpu-reset
//	119  GSP RPC Timeout                      -                                                   gpu-reset
//	120  GSP Error                            -                                                   gpu-reset
package fault
