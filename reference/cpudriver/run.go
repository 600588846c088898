package cpudriver

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the NUMA nodes, starts the kubelet plugin, publishes the
// node's pool and serves until ctx is canceled (then it returns nil) or a
// fatal error stops it.
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

// run is Run with the client injected.
func run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	numa, err := discover(cfg.HostRoot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("create state directory %s: %w", cfg.StateDir, err)
	}
	for _, nn := range numa {
		klog.FromContext(ctx).Info("Found NUMA node", "id", nn.ID, "cpus", len(nn.CPUs), "cpulist", nn.CPUList, "memoryBytes", nn.MemoryBytes)
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	n := newNode(cfg.NodeName, numa)
	hcfg := pluginharness.Config{
		DriverName:        cfg.DriverName,
		NodeName:          cfg.NodeName,
		CDIDir:            cfg.CDIDir,
		CheckpointDir:     cfg.StateDir,
		CheckpointVersion: checkpointVersion,
		Client:            client,
		RegistrarDir:      cfg.KubeletRegistrarDir,
		PluginDir:         pluginDir,
		HTTPEndpoint:      cfg.HTTPEndpoint,
		RunningLog: func() []any {
			return []any{"numaNodes", len(numa), "hostRoot", cfg.HostRoot, "registrarDir", cfg.KubeletRegistrarDir,
				"pluginDir", pluginDir, "cdiDir", cfg.CDIDir, "stateDir", cfg.StateDir}
		},
	}
	return pluginharness.Run[pluginharness.PreparedDevice](ctx, n, hcfg)
}
