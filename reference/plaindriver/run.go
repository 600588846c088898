package plaindriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	if cfg.Defect == DefectStateLost {
		cp, err := dropCheckpoint(cfg.StateDir)
		if err != nil {
			return err
		}
		logger.Info("Defect state-lost-on-restart: started without the checkpoint", "checkpoint", cp)
	}
	hcfg := harnessConfig(cfg, n)
	hcfg.Client = client
	hcfg.RegistrarDir = cfg.KubeletRegistrarDir
	hcfg.PluginDir = pluginDir
	hcfg.Republish = republish
	hcfg.HTTPEndpoint = cfg.HTTPEndpoint
	hcfg.RunningLog = func() []any {
		return []any{"devices", len(n.devices), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir,
			"cdiDir", cfg.CDIDir, "stateDir", cfg.StateDir, "style", cfg.Style.effective()}
	}
	return pluginharness.Serve(ctx, hcfg, func(ctx context.Context, hcfg pluginharness.Config) (pluginharness.Served, error) {
		inner, err := pluginharness.New[pluginharness.PreparedDevice, *pluginharness.PreparedDevice](ctx, n, hcfg)
		if err != nil {
			return nil, err
		}
		return newPlugin(inner, n, cfg.DriverName, PrepareDelay), nil
	})
}

// dropCheckpoint removes the checkpoint in stateDir (DefectStateLost) and
// returns its path.
func dropCheckpoint(stateDir string) (string, error) {
	cp := filepath.Join(stateDir, pluginharness.CheckpointFile)
	if err := os.Remove(cp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("remove checkpoint %s: %w", cp, err)
	}
	return cp, nil
}
