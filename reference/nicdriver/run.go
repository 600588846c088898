package nicdriver

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// Run discovers the NICs, starts the kubelet plugin, publishes the node's
// pool and serves until ctx is canceled (then it returns nil) or a fatal
// error stops it (then it returns that error).
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

// run is Run with the client injected. It is pluginharness.Run around the
// NIC driver's own plugin (which the harness's Run cannot take): the same
// checks of the directories, kubelet plugin options, publishing and
// serving.
func run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if fi, err := os.Stat(cfg.KubeletRegistrarDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("find kubelet registrar directory %s: not a directory (is the kubelet running with this root directory?)", cfg.KubeletRegistrarDir)
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		return fmt.Errorf("create plugin directory %s: %w", pluginDir, err)
	}
	logger := klog.FromContext(ctx)
	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p, err := newPlugin(ctx, cfg, client, stop)
	if err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, p,
		kubeletplugin.DriverName(cfg.DriverName),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(cfg.KubeletRegistrarDir),
		kubeletplugin.PluginDataDirectoryPath(pluginDir),
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, p.Resources()); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	pfs, vfs := 0, 0
	for _, d := range p.hw.list {
		if d.Kind == kindPF {
			pfs++
		} else {
			vfs++
		}
	}
	logger.Info("Driver running", "driver", cfg.DriverName, "node", cfg.NodeName, "pfs", len(p.hw.pfs), "pfShareDevices", pfs, "vfDevices", vfs,
		"sysfsRoot", cfg.EffectiveSysfsRoot(), "registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir, "cdiDir", cfg.CDIDir,
		"deviceStatus", cfg.DeviceStatus)
	<-ctx.Done()
	if parent.Err() == nil {
		return context.Cause(ctx) // a fatal error from HandleError
	}
	logger.Info("Driver stopping")
	return nil
}
