package driver

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Run discovers the GPUs, starts the kubelet plugin, publishes the node's
// pool and serves until ctx is canceled (then it returns nil) or a fatal
// error stops it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := newClient(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	disc, lib, err := NewNVMLDiscoverer(cfg.DriverRoot, cfg.EffectiveSysfsRoot())
	if err != nil {
		return err
	}
	return run(ctx, cfg, client, disc, lib, &migOps{lib: disc.NVML, minorsPath: disc.MIGMinorsPath})
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

// run is Run with its dependencies injected; nvmlLib is the host path of the
// NVML library that CDI specs mount into containers, mig creates and
// destroys dynamic MIG devices.
func run(ctx context.Context, cfg Config, client kubernetes.Interface, disc Discoverer, nvmlLib string, mig *migOps) error {
	logger := klog.FromContext(ctx)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if fi, err := os.Stat(cfg.KubeletRegistrarDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("kubelet registrar directory %s does not exist (is the kubelet running with this root directory?)", cfg.KubeletRegistrarDir)
	}
	pluginDir := cfg.EffectiveKubeletPluginDir()
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		return fmt.Errorf("create plugin directory: %w", err)
	}

	inv, err := disc.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discover GPUs: %w", err)
	}
	cdi, err := newCDISpecs(cfg.CDIDir, cfg.DriverName, cfg.DriverRoot, nvmlLib)
	if err != nil {
		return err
	}

	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p, err := newPlugin(ctx, pluginOptions{
		driverName:     cfg.DriverName,
		poolName:       cfg.NodeName,
		inventory:      inv,
		pluginDir:      pluginDir,
		cdi:            cdi,
		mig:            mig,
		partitionAlpha: cfg.PartitionableAlpha,
		fatal:          stop,
	})
	if err != nil {
		return err
	}
	resources, err := p.resources()
	if err != nil {
		return fmt.Errorf("build ResourceSlices: %w", err)
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
	if err := helper.PublishResources(ctx, resources); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	logger.Info("Driver running", "driver", cfg.DriverName, "node", cfg.NodeName, "gpus", len(inv.GPUs),
		"registrarDir", cfg.KubeletRegistrarDir, "pluginDir", pluginDir, "cdiDir", cfg.CDIDir, "driverRoot", cfg.DriverRoot)

	<-ctx.Done()
	if parent.Err() == nil {
		return context.Cause(ctx) // a fatal error from HandleError
	}
	logger.Info("Driver stopping")
	return nil
}
