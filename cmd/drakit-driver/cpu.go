package main

import (
	"context"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/cpudriver"
	"drakit.dev/drakit/reference/pluginharness"
)

// cpuPlugin is --kind cpu: the CPU driver (reference/cpudriver) and its own
// flags.
func cpuPlugin(f *drivercmd.Flags) (any, *pluginharness.Kubelet, func(context.Context) error) {
	cfg := cpudriver.DefaultConfig()
	f.String(&cfg.HostRoot, "host-root", "HOST_ROOT", "root below which sys/devices/system/node is read (the emulator root on drakit's node)")
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "the driver's directory: checkpoint.json")
	return &cfg, &cfg.Kubelet, func(ctx context.Context) error { return cpudriver.Run(ctx, cfg) }
}
