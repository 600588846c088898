package plaindriver

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
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
	client, err := newClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cfg, client, republishInterval)
}

func newClient(kubeconfig string) (kubernetes.Interface, error) {
	var (
		rc  *rest.Config
		err error
	)
	if kubeconfig == "" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration (kubeconfig %q): %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	return client, nil
}

// run is Run with the client injected and the republish interval set.
func run(ctx context.Context, cfg Config, client kubernetes.Interface, republish time.Duration) error {
	logger := klog.FromContext(ctx)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if fi, err := os.Stat(cfg.KubeletRegistrarDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("find kubelet registrar directory %s: not a directory (is the kubelet running with this root directory?)", cfg.KubeletRegistrarDir)
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	for _, dir := range []string{pluginDir, cfg.StateDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	devs := nodeDevices(cfg.NodeName, cfg.Devices)
	if err := writeDeviceDirs(cfg.StateDir, devs); err != nil {
		return err
	}
	cdi, err := newCDISpecs(cfg.CDIDir, cfg.DriverName, cfg.StateDir)
	if err != nil {
		return err
	}

	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p, err := newPlugin(pluginOptions{
		driverName: cfg.DriverName,
		poolName:   cfg.NodeName,
		devices:    devs,
		stateDir:   cfg.StateDir,
		cdi:        cdi,
		defect:     cfg.Defect,
		fatal:      stop,
	})
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
	if cfg.Defect != "" {
		logger.Info("Running with a deliberate defect, for the conformance kit to catch", "defect", cfg.Defect)
	}
	resources := buildResources(cfg.NodeName, cfg.NodeName, devs, cfg.Defect)
	if err := helper.PublishResources(ctx, resources); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	logger.Info("Driver running", "driver", cfg.DriverName, "node", cfg.NodeName, "devices", len(devs),
		"registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir, "cdiDir", cfg.CDIDir, "stateDir", cfg.StateDir)

	republishUntilDone(ctx, helper, resources, republish)
	if parent.Err() == nil {
		return context.Cause(ctx) // a fatal error from HandleError
	}
	logger.Info("Driver stopping")
	return nil
}

// publisher is what republishUntilDone needs of the kubelet plugin helper.
type publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

// republishUntilDone hands resources to pub every interval until ctx ends.
// An unchanged pool costs the ResourceSlice controller a comparison with
// its informer's slices, no API call.
func republishUntilDone(ctx context.Context, pub publisher, resources resourceslice.DriverResources, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := pub.PublishResources(ctx, resources); err != nil {
				klog.FromContext(ctx).Error(err, "Publishing ResourceSlices again failed")
			}
		}
	}
}
