package pluginharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metadatav1alpha1 "k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// DefaultCDIDir is the directory container runtimes read CDI specs from by
// default.
const DefaultCDIDir = "/var/run/cdi"

// Sockets returns the paths of the sockets Run creates (the kubelet plugin
// helper's defaults): the registration socket
// <registrarDir>/<driverName>-reg.sock and the DRA socket
// <pluginDir>/dra.sock. Neither may be longer than
// unixsocket.MaxSocketPath.
func Sockets(registrarDir, pluginDir, driverName string) (registration, dra string) {
	return filepath.Join(registrarDir, driverName+"-reg.sock"), filepath.Join(pluginDir, "dra.sock")
}

// Run checks that the registrar directory exists, creates the plugin
// directory, creates the plugin (New, with a Fatal of its own), starts the
// kubelet plugin helper, publishes the pool and serves until ctx is
// canceled (then it returns nil) or a fatal error stops it (then it returns
// that error).
func Run[D any, P Record[D]](ctx context.Context, drv Driver[D], cfg Config) error {
	return Serve(ctx, cfg, func(ctx context.Context, cfg Config) (Served, error) {
		return New[D, P](ctx, drv, cfg)
	})
}

// Served is what Serve runs: a kubelet plugin and the pool it publishes.
// A *Plugin is one; so is a driver's plugin that wraps one. When it also
// has Plugin's Updated method (a *Plugin, or a type embedding one), Serve
// publishes Resources again each time Updated signals.
type Served interface {
	kubeletplugin.DRAPlugin
	Resources() resourceslice.DriverResources
}

// Serve is Run for a plugin that newPlugin makes: a driver that wraps the
// harness's Plugin in its own passes a newPlugin that calls New (with the
// cfg it is given, which carries Serve's Fatal) and wraps the result.
// Everything else is Run's: the same directory checks, kubelet plugin
// options, publishing, "Driver running" line and serving.
func Serve(ctx context.Context, cfg Config, newPlugin func(ctx context.Context, cfg Config) (Served, error)) error {
	logger := klog.FromContext(ctx)
	if fi, err := os.Stat(cfg.RegistrarDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("find kubelet registrar directory %s: not a directory (is the kubelet running with this root directory?)", cfg.RegistrarDir)
	}
	if err := os.MkdirAll(cfg.PluginDir, 0o750); err != nil {
		return fmt.Errorf("create plugin directory %s: %w", cfg.PluginDir, err)
	}
	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cfg.Fatal = stop
	_, dra := Sockets(cfg.RegistrarDir, cfg.PluginDir, cfg.DriverName)
	obs := newObserver(dra)
	if cfg.HTTPEndpoint != "" {
		_, stopHTTP, err := obs.serveHTTP(ctx, cfg.HTTPEndpoint)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	p, err := newPlugin(ctx, cfg)
	if err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, p, append(startOptions(cfg), kubeletplugin.GRPCInterceptor(obs.intercept))...)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()
	pub := gaugedPublisher{helper, obs}
	if err := pub.PublishResources(ctx, p.Resources()); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	running := []any{"driver", cfg.DriverName, "node", cfg.NodeName}
	if cfg.RunningLog != nil {
		running = append(running, cfg.RunningLog()...)
	}
	logger.Info("Driver running", running...)

	publishUntilDone(ctx, pub, p, cfg.Republish)
	if parent.Err() == nil {
		return context.Cause(ctx) // a fatal error from HandleError
	}
	logger.Info("Driver stopping")
	return nil
}

// metadataVersions are the versions of the device metadata files
// (metadata.resource.k8s.io), written in this order: the latest first (the
// kubelet plugin helper requires it), then v1alpha1 for consumers written
// for KEP-5304's alpha.
func metadataVersions() []schema.GroupVersion {
	return []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion, metadatav1alpha1.SchemeGroupVersion}
}

// startOptions are the kubelet plugin helper's options for cfg.
func startOptions(cfg Config) []kubeletplugin.Option {
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(cfg.DriverName),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.Client),
		kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir),
		kubeletplugin.PluginDataDirectoryPath(cfg.PluginDir),
		kubeletplugin.HealthService(cfg.Health),
	}
	if cfg.DeviceMetadata {
		opts = append(opts, kubeletplugin.EnableDeviceMetadata(true, metadataVersions()), kubeletplugin.CDIDirectory(cfg.CDIDir))
	}
	return opts
}

// NewClient returns a client from the kubeconfig file at kubeconfig, or
// from the in-cluster configuration (service account,
// KUBERNETES_SERVICE_HOST/PORT) when it is empty.
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
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
