// Command drakit-driver is drakit's reference DRA driver, the kubelet plugin
// of the driver DaemonSet. It maps flags (each with an environment twin; a
// flag given on the command line wins) onto driver.Config and calls
// driver.Run until SIGTERM or SIGINT. "drakit-driver imex-controller" is the
// driver's cluster-level IMEX channel controller (package reference/imex,
// one replica of a Deployment): its flags map onto imex.Config for
// imex.Run.
package main

import (
	"context"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/driver"
	"drakit.dev/drakit/reference/imex"
)

func main() { drivercmd.Main("drakit-driver", run) }

func run(args []string) error {
	if len(args) > 0 && args[0] == "imex-controller" {
		return runIMEXController(args[1:])
	}
	cfg := driver.DefaultConfig()
	f := drivercmd.New("drakit-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig, HTTPEndpoint: &cfg.HTTPEndpoint,
		PluginDirUsage: "driver data directory (DRA socket, checkpoint)",
	})
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
	logging, help, err := f.Parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-driver", logging, func(ctx context.Context) error { return driver.Run(ctx, cfg) })
}

func runIMEXController(args []string) error {
	cfg := imex.DefaultConfig()
	f := drivercmd.New("drakit-driver imex-controller")
	f.String(&cfg.DriverName, "driver-name", "DRIVER_NAME", "the GPU driver's name")
	f.String(&cfg.DeviceClass, "device-class", "IMEX_DEVICE_CLASS", "the IMEX channel DeviceClass, owner of the published slices")
	f.Int(&cfg.Channels, "channels", "IMEX_CHANNELS", "IMEX channels per clique (every node of a clique must have them)")
	f.String(&cfg.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	logging, help, err := f.Parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-imex-controller", logging, func(ctx context.Context) error { return imex.Run(ctx, cfg) })
}
