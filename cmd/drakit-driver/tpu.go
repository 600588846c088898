package main

import (
	"context"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/tpudriver"
)

// tpuPlugin is --kind tpu: the TPU driver's kubelet plugin
// (reference/tpudriver) and its own flags.
func tpuPlugin(f *drivercmd.Flags) (any, *pluginharness.Kubelet, func(context.Context) error) {
	cfg := tpudriver.DefaultConfig()
	f.String(&cfg.HostRoot, "host-root", "HOST_ROOT", `root of the node's sysfs and device nodes: "/" on a real node, the emulator root otherwise`)
	f.String(&cfg.TPUEnvFile, "tpu-env-file", "TPU_ENV_FILE", "the host's tpu-env (metadata server attribute); empty: below the host root")
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "directory of the checkpoint")
	return &cfg, &cfg.Kubelet, func(ctx context.Context) error { return tpudriver.Run(ctx, cfg) }
}

// tpuController is controller --kind tpu: the TPU driver's controller,
// which publishes the multi-host sub-slice pools.
func tpuController(f *drivercmd.Flags) (any, *string, *string, func(context.Context) error) {
	cfg := tpudriver.DefaultControllerConfig()
	f.Var((*shapes)(&cfg.Shapes), "shapes", "SHAPES", `sub-slice shapes to publish, comma-separated XxYxZ or "full" (the slice's topology)`)
	f.Duration(&cfg.Interval, "interval", "INTERVAL", "how often to read the node pools again")
	return &cfg, &cfg.DriverName, &cfg.Kubeconfig, func(ctx context.Context) error { return tpudriver.RunController(ctx, cfg) }
}

// shapes is the flag value of sub-slice shapes (tpudriver.ParseShapes).
type shapes []string

func (s *shapes) String() string { return strings.Join(*s, ",") }
func (s *shapes) Type() string   { return "shapes" }

func (s *shapes) Set(v string) error {
	parsed, err := tpudriver.ParseShapes(v)
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}
