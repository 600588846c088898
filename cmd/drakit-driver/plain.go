package main

import (
	"context"
	"strings"

	"drakit.dev/drakit/internal/drivercmd"
	"drakit.dev/drakit/reference/plaindriver"
	"drakit.dev/drakit/reference/pluginharness"
)

// plainPlugin is --kind plain: drakit's plain test driver
// (reference/plaindriver) and its own flags.
func plainPlugin(f *drivercmd.Flags) (any, *pluginharness.Kubelet, func(context.Context) error) {
	cfg := plaindriver.DefaultConfig()
	f.String(&cfg.StateDir, "state-dir", "STATE_DIR", "the driver's directory: checkpoint and devices/<device>/serial, mounted into containers")
	f.Int(&cfg.Devices, "devices", "DEVICES", "number of devices to publish, dev-0 … dev-<n-1>")
	f.String((*string)(&cfg.Style), "style", "STYLE",
		"how devices are published and handed to containers: "+names(plaindriver.Styles())+"; empty: mounts")
	f.String((*string)(&cfg.Defect), "defect", "DEFECT",
		"a deliberate bug for the conformance kit to catch: "+names(plaindriver.Defects())+"; empty: none")
	return &cfg, &cfg.Kubelet, func(ctx context.Context) error { return plaindriver.Run(ctx, cfg) }
}

func names[T ~string](all []T) string {
	s := make([]string, len(all))
	for i, n := range all {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}
