package plaindriver

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// republishInterval is how often the driver hands its pool to the
// ResourceSlice controller again. The controller retries what the apiserver
// rejects by itself, but not a pool it refuses before sending it (duplicate
// device names): that refusal would be logged once, at start.
const republishInterval = 15 * time.Second

// Run starts the kubelet plugin, publishes the node's pool and serves until
// ctx is canceled (then it returns nil) or a fatal error stops it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := pluginharness.NewClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cfg, client, republishInterval)
}

// run is Run with the client injected and the republish interval set.
func run(ctx context.Context, cfg Config, client kubernetes.Interface, republish time.Duration) error {
	logger := klog.FromContext(ctx)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("create state directory %s: %w", cfg.StateDir, err)
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	n := newNode(cfg)
	if err := writeDeviceDirs(cfg.StateDir, n.devices); err != nil {
		return err
	}
	if cfg.Defect != "" {
		logger.Info("Running with a deliberate defect, for the conformance kit to catch", "defect", cfg.Defect)
	}
	hcfg := harnessConfig(cfg, n)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.Republish = republish
	hcfg.HTTPEndpoint = cfg.HTTPEndpoint
	hcfg.RunningLog = func() []any {
		return []any{"devices", len(n.devices), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir,
			"cdiDir", cfg.CDIDir, "stateDir", cfg.StateDir}
	}
	return pluginharness.Run[pluginharness.PreparedDevice](ctx, n, hcfg)
}
