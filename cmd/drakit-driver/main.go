// Command drakit-driver is drakit's reference DRA driver, the kubelet plugin
// of the driver DaemonSet. It maps flags (each with an environment twin; a
// flag given on the command line wins) onto driver.Config and calls
// driver.Run until SIGTERM or SIGINT.
package main

import (
	"context"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/driver"
)

func main() { drivercmd.Main("drakit-driver", run) }

func run(args []string) error {
	cfg := driver.DefaultConfig()
	f := drivercmd.New("drakit-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig,
		PluginDirUsage: "driver data directory (DRA socket, checkpoint)",
	})
	f.String(&cfg.DriverRoot, "driver-root", "DRIVER_ROOT", `NVIDIA driver root: "/" on a real node, the emulator root otherwise`)
	f.String(&cfg.SysfsRoot, "sysfs-root", "SYSFS_ROOT", "sysfs to read PCI topology from; empty: <driver-root>/sys")
	f.Bool(&cfg.PartitionableAlpha, "partitionable-alpha", "PARTITIONABLE_ALPHA",
		"publish the alpha fields of partitionable devices (partitionTypeAttribute, compatibility groups; KEPs 5677/5963)")
	logging, help, err := f.Parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-driver", logging, func(ctx context.Context) error { return driver.Run(ctx, cfg) })
}
