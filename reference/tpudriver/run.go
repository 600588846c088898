package tpudriver

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the chips, starts the kubelet plugin, publishes the node's
// pool and serves until ctx is canceled (then it returns nil) or a fatal
// error stops it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cfg, client)
}

func run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	n, err := newNode(cfg, client)
	if err != nil {
		return err
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	hcfg := harnessConfig(cfg, n)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.HTTPEndpoint = cfg.HTTPEndpoint
	hcfg.RunningLog = func() []any {
		return []any{"chips", len(n.h.chips), "generation", n.h.env.Generation, "slice", n.h.env.SliceName,
			"topology", n.h.env.Slice.Topology.String(), "workerID", n.h.env.WorkerID, "hostRoot", cfg.HostRoot, "cdiDir", cfg.CDIDir}
	}
	return pluginharness.Run[preparedChips](ctx, n, hcfg)
}

// newNode validates cfg, creates the state directory and discovers the
// host.
func newNode(cfg Config, client kubernetes.Interface) (*node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", cfg.StateDir, err)
	}
	h, err := discover(cfg.HostRoot, cfg.EffectiveTPUEnvFile())
	if err != nil {
		return nil, fmt.Errorf("discover TPU chips below %s: %w", cfg.HostRoot, err)
	}
	return &node{name: cfg.NodeName, driver: cfg.DriverName, hostRoot: cfg.HostRoot, h: h, client: client}, nil
}
