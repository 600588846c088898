package pluginharness

import (
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/internal/unixsocket"
)

// The helpers below are the checks of a driver's configuration that every
// driver on the harness makes alike. Their errors name the field and are
// not classified: a driver wraps them in its own ErrInvalidConfig.

// EffectivePluginDir returns pluginDir, or
// /var/lib/kubelet/plugins/<driverName> (the kubelet's plugin directory)
// when it is empty.
func EffectivePluginDir(pluginDir, driverName string) string {
	if pluginDir != "" {
		return pluginDir
	}
	return filepath.Join(kubeletplugin.KubeletPluginsDir, driverName)
}

// CheckNames reports a DriverName that is not a DNS subdomain of at most 63
// characters, a missing NodeName, or one that is not usable as a pool name.
func CheckNames(driverName, nodeName string) error {
	if msgs := validation.IsDNS1123Subdomain(driverName); len(msgs) > 0 {
		return fmt.Errorf("DriverName %q: %s", driverName, strings.Join(msgs, "; "))
	}
	if len(driverName) > 63 {
		return fmt.Errorf("DriverName %q is longer than 63 characters", driverName)
	}
	if nodeName == "" {
		return fmt.Errorf("NodeName is required")
	}
	// The pool is named after the node; pool names are DNS subdomains.
	if msgs := validation.IsDNS1123Subdomain(nodeName); len(msgs) > 0 {
		return fmt.Errorf("NodeName %q is not usable as a pool name: %s", nodeName, strings.Join(msgs, "; "))
	}
	return nil
}

// PathField is a path field of a driver's configuration for CheckPaths.
type PathField struct {
	// Field is the field's name, Value its value.
	Field, Value string
	// Optional allows an empty Value (a path derived from others).
	Optional bool
}

// CheckPaths reports the first of paths that is not absolute (an optional
// one may be empty).
func CheckPaths(paths ...PathField) error {
	for _, p := range paths {
		switch {
		case p.Optional && p.Value == "":
		case p.Optional && !filepath.IsAbs(p.Value):
			return fmt.Errorf("%s %q must be an absolute path or empty", p.Field, p.Value)
		case !filepath.IsAbs(p.Value):
			return fmt.Errorf("%s %q must be an absolute path", p.Field, p.Value)
		}
	}
	return nil
}

// CheckSockets reports a socket of Sockets(registrarDir, pluginDir,
// driverName) longer than unixsocket.MaxSocketPath, naming the field of the
// directory it is in (KubeletRegistrarDir, KubeletPluginDir).
func CheckSockets(registrarDir, pluginDir, driverName string) error {
	registration, dra := Sockets(registrarDir, pluginDir, driverName)
	if err := unixsocket.CheckSocketPath(registration); err != nil {
		return fmt.Errorf("KubeletRegistrarDir %q: registration %w", registrarDir, err)
	}
	if err := unixsocket.CheckSocketPath(dra); err != nil {
		return fmt.Errorf("KubeletPluginDir %q: DRA %w", pluginDir, err)
	}
	return nil
}

// Kubelet is the part of a driver's configuration that every driver on
// the harness has, its Config embeds it: who it is, where its node's
// kubelet and container runtime look for it, and how it reaches the API
// server. drakit-driver binds its flags once for every kind
// (internal/drivercmd.Flags.Kubelet).
type Kubelet struct {
	// DriverName is the DRA driver name: a DNS subdomain of at most 63
	// characters (CheckNames). Each driver has its default.
	DriverName string
	// NodeName is the Node the driver runs on; its pool is named after
	// it. Required.
	NodeName string
	// KubeletRegistrarDir is the kubelet's plugin registration directory;
	// it must exist. Default /var/lib/kubelet/plugins_registry.
	KubeletRegistrarDir string
	// KubeletPluginDir is the driver's own directory below the kubelet's
	// plugins: the DRA gRPC socket (and the checkpoints of the drivers
	// that keep them there). Empty: derived as
	// /var/lib/kubelet/plugins/<DriverName> (EffectivePluginDir). Created
	// when missing.
	KubeletPluginDir string
	// CDIDir is where the per-claim CDI specs are written; the container
	// runtime must watch it. Default DefaultCDIDir. Created when missing.
	CDIDir string
	// HTTPEndpoint, when set, is the loopback host:port the driver serves
	// /metrics and /healthz on (Config.HTTPEndpoint); empty: none.
	HTTPEndpoint string
	// Kubeconfig is the path of a kubeconfig file; empty means the
	// in-cluster configuration (service account,
	// KUBERNETES_SERVICE_HOST/PORT).
	Kubeconfig string
}
