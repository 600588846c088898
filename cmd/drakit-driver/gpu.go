package main

import (
	"context"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/driver"
	"drakit.dev/drakit/reference/imex"
	"drakit.dev/drakit/reference/pluginharness"
)

// gpuPlugin is --kind gpu: the GPU driver (reference/driver) and its own
// flags.
func gpuPlugin(f *drivercmd.Flags) (any, *pluginharness.Kubelet, func(context.Context) error) {
	cfg := driver.DefaultConfig()
	f.String(&cfg.DriverRoot, "driver-root", "DRIVER_ROOT", `NVIDIA driver root: "/" on a real node, the emulator root otherwise`)
	f.String(&cfg.SysfsRoot, "sysfs-root", "SYSFS_ROOT", "sysfs to read PCI topology from; empty: <driver-root>/sys")
	f.Bool(&cfg.PartitionableAlpha, "partitionable-alpha", "PARTITIONABLE_ALPHA",
		"publish the alpha fields of partitionable devices (partitionTypeAttribute of KEP-4815, gate DRAPartitionableDevicesType; compatibility groups of KEP-5963)")
	f.Bool(&cfg.DeviceMetadata, "device-metadata", "DEVICE_METADATA",
		"write device metadata files that containers read below /var/run/kubernetes.io/dra-device-attributes (KEP-5304)")
	f.Bool(&cfg.BindingConditions, "binding-conditions", "BINDING_CONDITIONS",
		"publish every device with bindingConditions <driver-name>/attached and bindingFailureConditions <driver-name>/attach-failed (KEP-5007), which an attach controller outside the driver sets")
	f.Bool(&cfg.ListAttributes, "list-attributes", "LIST_ATTRIBUTES",
		"publish the int list attribute closeNUMANodes on every device (KEP-5491, alpha gate DRAListTypeAttributes)")
	f.Bool(&cfg.DeviceNodesOnly, "device-nodes-only", "DEVICE_NODES_ONLY",
		"CDI edits give only the devices' nodes and /dev/nvidiactl (no NVML library, state or DRAKIT_DEVICE_* variables): the node's container stack provides NVML, as for a third-party driver")
	return &cfg, &cfg.Kubelet, func(ctx context.Context) error { return driver.Run(ctx, cfg) }
}

// imexController is controller --kind gpu: the GPU driver's IMEX channel
// controller (reference/imex).
func imexController(f *drivercmd.Flags) (any, *string, *string, func(context.Context) error) {
	cfg := imex.DefaultConfig()
	f.String(&cfg.DeviceClass, "device-class", "IMEX_DEVICE_CLASS", "the IMEX channel DeviceClass, owner of the published slices")
	f.Int(&cfg.Channels, "channels", "IMEX_CHANNELS", "IMEX channels per clique (every node of a clique must have them)")
	return &cfg, &cfg.DriverName, &cfg.Kubeconfig, func(ctx context.Context) error { return imex.Run(ctx, cfg) }
}
