// Package exec runs an unmodified program on the emulated node: in a
// private mount namespace in which an emulator root R (emulator/render) is
// laid over the host's own paths, so that a driver that reads /sys/bus/pci,
// /dev/nvidia*, /proc/driver/nvidia and dlopens libnvidia-ml.so.1 the way
// it does on real hardware — no driver-root prefix, no library path — sees
// the emulated node ("drakit emulator exec").
//
// # What the command sees
//
//	/sys/bus/<each of R/sys/bus>                 R's (pci: devices, drivers)
//	/sys/devices/pci<dddd>:<bb>                  R's host bridges (one mount each)
//	/sys/devices/system/{node,cpu}               R's NUMA and CPU topology
//	/sys/{class,kernel}/<each entry of R's>      (none rendered today)
//	/dev                                         a tmpfs: every real entry bound back except
//	                                             nvidia*, plus R's nvidia<minor>, nvidiactl, nvidia-caps/
//	/proc/devices, /proc/driver/{nvidia,nvidia-caps}   R's
//	<LibraryDir> (/usr/lib/x86_64-linux-gnu)     a tmpfs: every real entry bound back except
//	                                             libnvidia-ml.so*, plus R's (or --shim's)
//	                                             libnvidia-ml.so.<driverVersion> and the .so.1 link
//	/usr/bin/nvidia-smi                          R's (when rendered): bound over the host's, or,
//	                                             where the host has none, /usr/bin becomes a tmpfs
//	                                             with every real entry bound back
//	$DRAKIT_EMULATOR_ROOT=R                      where the shim and nvidia-smi find the state file
//
// Everything else (the rest of /sys and /proc, /sys/fs/cgroup, /run, /var,
// /tmp, the network) is the host's. Symbolic links in R are relative, as the
// kernel makes them, so /sys/bus/pci/devices/<bdf> resolves to
// /sys/devices/pci<dddd>:<bb>/…/<bdf> and k8s.io/dynamic-resource-
// allocation's deviceattribute finds the PCIe root and NUMA node with its
// default /sys.
//
// # Contracts
//
//   - The host is never changed. Run unshares the mount namespace of one
//     locked OS thread (never the main thread) and makes every mount in it a
//     slave of the host's, recursively, before mounting anything, so no mount
//     propagates back; the thread ends with Run and the namespace with the
//     command. The only writes outside R are staging directories under
//     $TMPDIR, created and removed again (rmdir only) before the command
//     starts. Nothing is created in a host directory: a target the host
//     lacks (/dev/nvidia0, /proc/driver/nvidia, the library) is created in
//     the tmpfs of a shadowed directory, and Run refuses to create anything
//     elsewhere. No sysctl, no remount of /sys/fs/cgroup, /proc, /sys or /.
//   - Shadowing (the /dev choice): rather than a minimal /dev with a few
//     copied nodes, the tmpfs over /dev binds back every real entry (null,
//     zero, urandom, tty, pts, shm, fuse, disks…), so the command sees the
//     host's devices as before, minus the host's own NVIDIA nodes, plus the
//     emulated ones. Entries the host adds to a shadowed directory after the
//     command starts do not appear in it, and what the command creates
//     there stays in the namespace's tmpfs.
//   - Writes through the bind mounts reach R: a MIG change through the shim
//     creates R's capability files and /dev/nvidia-caps nodes, so other
//     processes on the same root (the driver, drakit emulator mig) agree.
//     Device nodes are bound as they exist when the command starts;
//     rendering R again while the command runs is not seen by it.
//   - The NVML shim's root follows from its path in the namespace ("/"), so
//     Run sets $DRAKIT_EMULATOR_ROOT to R in the command's environment; a
//     program that clears its environment gets NVML_ERROR_DRIVER_NOT_LOADED.
//     nvidia-smi reads the same variable; it is R's, built with R's shim
//     sources, whatever Config.Shim names.
//   - The emulated /sys/devices/system/cpu replaces the host's: glibc's
//     get_nprocs and "nproc --all" count the profile's CPUs there, while
//     sched_getaffinity (Go's GOMAXPROCS) still reports the host's.
//   - A target whose nearest existing directory would be /, /proc, /sys or
//     /sys/fs/cgroup is refused with an error naming it; a root without a
//     rendered node (ErrNotRendered) or without an NVML library and no
//     Config.Shim is refused before anything is mounted.
//   - Run needs root (CAP_SYS_ADMIN): ErrNotPermitted otherwise. It returns
//     when the command exits; a non-zero status is an error wrapping
//     *os/exec.ExitError, so the caller can exit with the same status.
package exec
