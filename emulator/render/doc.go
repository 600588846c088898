// Package render writes a node profile (package emulator/profile) as the
// surfaces the kernel and the NVIDIA driver expose, under an emulator root R
// (the layout of docs/architecture.md):
//
//	R/sys/devices/pci<dddd>:<bb>/<root port>/[<switch up>/<switch down>/]<gpu>/
//	    vendor device subsystem_vendor subsystem_device class revision
//	    numa_node local_cpulist local_cpus modalias resource uevent
//	    driver -> …/bus/pci/drivers/<nvidia|pcieport>   subsystem -> …/bus/pci
//	    (bridges also secondary_bus_number, subordinate_bus_number)
//	R/sys/bus/pci/devices/<bdf> -> ../../../devices/pci…/<bdf>
//	R/sys/bus/pci/drivers/{nvidia,pcieport}/<bdf> -> ../../../../devices/pci…/<bdf>
//	R/sys/devices/system/node/{online,possible,has_cpu,node<N>/{cpulist,cpumap,distance}}
//	R/sys/devices/system/cpu/{online,possible,present,cpu<C>/{node<N> link,topology/physical_package_id}}
//	R/dev/nvidia<minor> (c 195:<minor>), R/dev/nvidiactl (c 195:255), mode 0666
//	R/dev/nvidia-caps/nvidia-cap1 (config, 0400), nvidia-cap2 (monitor, 0444), and
//	    nvidia-cap<minor> (0444) per created MIG GI and CI; major NvidiaCapsMajor (235)
//	R/proc/devices (with "235 nvidia-caps"), R/proc/driver/nvidia/version,
//	R/proc/driver/nvidia/gpus/<bdf>/information
//	R/proc/driver/nvidia-caps/mig-minors: "config 1", "monitor 2", then for GPU
//	    minors 0..31 (more if the profile has higher minors) "gpu<g>/gi<i>/access
//	    <3+g·135+i·9>" and its eight "gpu<g>/gi<i>/ci<c>/access <…+1+c>" lines
//	R/proc/driver/nvidia/capabilities/mig/{config,monitor} and, per created
//	    instance, …/gpu<minor>/mig/gi<GI>/access and …/gi<GI>/ci<CI>/access:
//	    "DeviceFileMinor: <m>\nDeviceFileMode: <decimal mode>\nDeviceFileModify: 1\n"
//	R/run/drakit-emulator/nvml.state (package emulator/nvmlstate; GPUs in PCI order;
//	    for each GPU with a mig section its migMode, MIG profile tables and the
//	    static layout's GIs and CIs, with MIG UUIDs from profile.DeriveMIGUUID;
//	    then the end record; written to a temporary file, fsynced and renamed)
//	R/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driverVersion> and libnvidia-ml.so.1 -> it
//	R/usr/bin/nvidia-smi (the emulator's, a static executable answering from
//	    R's NVML state; NVIDIA's GPU kubelet plugin requires one in its driver root)
//	R/.drakit-emulator-root (MarkerFile)
//
// Every symbolic link is relative, as the kernel makes sysfs links, so the
// tree resolves wherever R is mounted; deviceattribute's pcieRoot and
// numaNode helpers read it through WithFSFromRoot(R/sys). The bridges are an
// Intel root port and Broadcom PEX switch ports; BARs are laid out from
// 0x80000000 (BAR0) and 0x200000000000 (BAR1, BAR3) in PCI order.
//
// Contracts: Render owns R entirely. R must be a real directory (a symbolic
// link is refused, naming its target); Render refuses a non-empty directory
// without the marker (ErrNotOwned) and a root with a mount point below it
// (ErrMountPoint, also a bind mount on the same filesystem) before it
// changes anything; R itself may be a mount point. It writes the new tree
// into R/.drakit-render-new, then swaps each top-level entry in by rename
// (what it replaces goes to R/.drakit-render-old and is deleted), so
// rendering again converges on exactly the profile's tree, a bind mount of R
// sees the new tree, and a render that fails — a full disk
// (errors.Is(err, syscall.ENOSPC), the message says what to free), no
// permission — leaves the previous root as it was, or no root where there
// was none (an empty directory stays empty; the error says which). A render that was killed leaves the
// staging directories, which the next render removes. One render of a root
// at a time; readers should not use the root during the swap. It needs root
// or CAP_MKNOD for the device nodes (ErrDeviceNodes); the NVML shim is
// installed only when Options.ShimLibrary is set, nvidia-smi only when
// Options.NvidiaSMI is (by default it is beside the shim). Errors name
// files relative to R.
package render
