// Command drakit-tpu-driver is drakit's reference TPU DRA driver
// (reference/tpudriver). Without a subcommand it is the kubelet plugin of
// the TPU driver DaemonSet; "controller" runs the cluster-level controller
// that publishes the multi-host sub-slice pools (a one-replica
// Deployment). It ships in the reference driver's image. Flags have
// environment twins; a flag given on the command line wins.
package main

import (
	"context"
	"fmt"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/internal/logflags"
	"drakit.dev/drakit/reference/tpudriver"
)

func main() { drivercmd.Main("drakit-tpu-driver", run) }

// parsePlugin maps args and the environment onto the plugin's Config.
func parsePlugin(args []string) (cfg tpudriver.Config, logging *logflags.Logging, help bool, err error) {
	cfg = tpudriver.DefaultConfig()
	f := drivercmd.New("drakit-tpu-driver")
	f.Kubelet(drivercmd.Kubelet{
		DriverName: &cfg.DriverName, NodeName: &cfg.NodeName, KubeletRegistrarDir: &cfg.KubeletRegistrarDir,
		KubeletPluginDir: &cfg.KubeletPluginDir, CDIDir: &cfg.CDIDir, Kubeconfig: &cfg.Kubeconfig, HTTPEndpoint: &cfg.HTTPEndpoint,
		PluginDirUsage: "driver data directory (DRA socket)",
	})
	f.String(&cfg.HostRoot, "host-root", "HOST_ROOT", `root of the node's sysfs and device nodes: "/" on a real node, the emulator root otherwise`)
	f.String(&cfg.TPUEnvFile, "tpu-env-file", "TPU_ENV_FILE", "the host's tpu-env (metadata server attribute); empty: below the host root")
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "directory of the checkpoint")
	logging, help, err = f.Parse(args)
	return cfg, logging, help, err
}

// parseController maps args and the environment onto ControllerConfig.
func parseController(args []string) (cfg tpudriver.ControllerConfig, logging *logflags.Logging, help bool, err error) {
	cfg = tpudriver.DefaultControllerConfig()
	f := drivercmd.New("drakit-tpu-driver controller")
	f.String(&cfg.DriverName, "driver-name", "DRIVER_NAME", "DRA driver name")
	f.String(&cfg.Kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file; empty: in-cluster configuration")
	shapes := tpudriver.DefaultShapes
	f.String(&shapes, "shapes", "SHAPES", `sub-slice shapes to publish, comma-separated XxYxZ or "full" (the slice's topology)`)
	f.Duration(&cfg.Interval, "interval", "INTERVAL", "how often to read the node pools again")
	logging, help, err = f.Parse(args)
	if err == nil && !help {
		if cfg.Shapes, err = tpudriver.ParseShapes(shapes); err != nil {
			err = fmt.Errorf("--shapes: %w", err)
		}
	}
	return cfg, logging, help, err
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "controller" {
		cfg, logging, help, err := parseController(args[1:])
		if err != nil || help {
			return err
		}
		return drivercmd.Run("drakit-tpu-driver", logging, func(ctx context.Context) error { return tpudriver.RunController(ctx, cfg) })
	}
	cfg, logging, help, err := parsePlugin(args)
	if err != nil || help {
		return err
	}
	return drivercmd.Run("drakit-tpu-driver", logging, func(ctx context.Context) error { return tpudriver.Run(ctx, cfg) })
}
