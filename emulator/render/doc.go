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
//	R/sys/bus/pci/drivers/{nvidia,pcieport,mlx5_core,ice}/<bdf> -> ../../../../devices/pci…/<bdf>
//	R/sys/devices/pci…/<nic pf>/ (a NIC's physical function: the files above, class
//	    0x020000, driver -> …/drivers/<mlx5_core|ice>, and with SR-IOV
//	    sriov_totalvfs sriov_numvfs (0) sriov_offset sriov_stride sriov_vf_device
//	    sriov_drivers_autoprobe; net/<if>/{address perm_addr addr_len mtu speed
//	    operstate carrier duplex ifindex iflink type flags dev_id dev_port
//	    phys_port_name tx_queue_len uevent, device, subsystem}; RDMA NICs
//	    infiniband/mlx5_<N>/{node_type node_guid sys_image_guid hca_type
//	    ports/1/{state phys_state rate link_layer gid_attrs/ndevs/0}, device}
//	    and infiniband_verbs/uverbs<N>/{ibdev abi_version dev, device})
//	R/sys/class/net/<if> -> ../../devices/pci…/<pf>/net/<if>
//	R/sys/class/infiniband/mlx5_<N>, R/sys/class/infiniband_verbs/uverbs<N> (links),
//	    R/sys/class/infiniband_verbs/abi_version
//	R/dev/infiniband/uverbs<N> (c 231:192+N, 0666); R/proc/devices then lists
//	    "231 infiniband_verbs" and "240 infiniband_verbs" (uverbs past 32)
//	R/sys/devices/pci…/<tpu chip>/ (spec.tpu: vendor 0x1ae0, the generation's
//	    device id, driver vfio-pci (v5e+) or tpu_accel (v4), iommu_group ->
//	    R/sys/kernel/iommu_groups/<i>, accel/accel<i>/{dev uevent device subsystem})
//	R/sys/kernel/iommu_groups/<i>/devices/<bdf> (link), R/sys/class/accel/accel<i> (link)
//	R/dev/accel<i> (c 261:<i>, every generation), R/dev/vfio/<i> (c 241:<i>) and
//	    R/dev/vfio/vfio (c 10:196) for vfio-bound generations; i = chip index
//	R/run/drakit-emulator/tpu.json (internal/tpuhw.HostFile: the host's place in
//	    its slice, ground truth for the kit) and
//	    R/run/drakit-emulator/metadata/instance/attributes/tpu-env (what a GCE
//	    metadata server serves; drivers read the slice and worker id from it)
//	R/sys/devices/system/node/{online,possible,has_cpu,node<N>/{cpulist,cpumap,distance,meminfo}}
//	    (meminfo only for nodes with spec.numaNodes[].memory: MemTotal, MemFree, MemUsed)
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
//	    static layout's GIs and CIs, with MIG UUIDs from gpu.DeriveMIGUUID;
//	    then the end record; written to a temporary file, fsynced and renamed)
//	R/run/drakit-emulator/nvml.generation (nvmlstate.BumpGeneration: a new
//	    file at 1; after the swap the replaced root's file is bumped, so NVML
//	    clients that mapped it reread and find the new root)
//	R/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driverVersion> and libnvidia-ml.so.1 -> it
//	R/usr/bin/nvidia-smi (the emulator's, a static executable answering from
//	    R's NVML state; NVIDIA's GPU kubelet plugin requires one in its driver root)
//	R/.drakit-emulator-root (MarkerFile)
//
// Every symbolic link is relative, as the kernel makes sysfs links, so the
// tree resolves wherever R is mounted; deviceattribute's pcieRoot and
// numaNode helpers read it through WithFSFromRoot(R/sys). The bridges are an
// Intel root port and Broadcom PEX switch ports; BARs are laid out from
// 0x80000000 (GPU BAR0) and 0x200000000000 (a 2 TiB slot per endpoint in PCI
// order: GPU BAR1 and BAR3, NIC BAR0 and SR-IOV BAR).
//
// NICs are numbered in PCI order as the kernel probes them: interface
// indexes from 2 (1 is lo, not rendered), RDMA devices mlx5_0, … with
// uverbs0, … (internal/nichw has the device numbers). The files each kind of
// device shows come from emulator/internal/sysfs, which emulator/sriov uses
// for the VFs it creates; sysfs.go renders the PCIe tree, nic.go a NIC's
// SR-IOV, netdev and RDMA, devproc.go and mig.go the GPUs' /dev and /proc,
// numa.go the NUMA and CPU topology, tpu.go the TPU chips' IOMMU groups,
// accel devices, nodes and host facts.
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
