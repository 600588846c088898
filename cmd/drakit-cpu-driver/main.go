// Command drakit-cpu-driver is drakit's CPU and memory DRA driver
// (reference/cpudriver), the kubelet plugin of the CPU driver DaemonSet. It
// maps flags (each with an environment twin; a flag given on the command
// line wins) onto cpudriver.Config and calls cpudriver.Run until SIGTERM or
// SIGINT.
package main

import (
	"context"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/internal/logflags"
	"drakit.dev/drakit/reference/cpudriver"
)

func main() { drivercmd.Main("drakit-cpu-driver", run) }

// parse maps args and the environment onto a Config and the logging
// configuration; help is true when --help was asked for.
func parse(args []string) (cfg cpudriver.Config, logging *logflags.Logging, help bool, err error) {
	cfg = cpudriver.DefaultConfig()
	f := drivercmd.New("drakit-cpu-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig, HTTPEndpoint: &cfg.HTTPEndpoint,
		PluginDirUsage: "directory of the DRA socket",
	})
	f.String(&cfg.HostRoot, "host-root", "HOST_ROOT", "root below which sys/devices/system/node is read (the emulator root on drakit's node)")
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "the driver's directory: checkpoint.json")
	logging, help, err = f.Parse(args)
	return cfg, logging, help, err
}

func run(args []string) error {
	cfg, logging, help, err := parse(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-cpu-driver", logging, func(ctx context.Context) error { return cpudriver.Run(ctx, cfg) })
}
