package driver

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
)

// DefaultDriverName is the reference driver's name (docs/architecture.md).
const DefaultDriverName = "gpu.drakit.dev"

// DefaultCDIDir is the CDI spec directory container runtimes watch by default.
const DefaultCDIDir = pluginharness.DefaultCDIDir

// ErrInvalidConfig classifies every error returned by Config.Validate.
var ErrInvalidConfig = errors.New("invalid driver configuration")

// Config configures the driver. Empty path fields marked "derived" take their
// value from other fields; use the accessor methods to read the effective value.
// Every path is a host path that must also be valid inside the driver's
// container (the DaemonSet mounts each one at the same path).
type Config struct {
	// DriverName is the DRA driver name: a DNS subdomain of at most 63
	// characters. Default gpu.drakit.dev.
	DriverName string
	// NodeName is the Node this driver runs on; the pool is named after it.
	// Required.
	NodeName string
	// DriverRoot is the root of the NVIDIA driver installation: "/" on a real
	// node, the emulator root (drakit emulator render --root) otherwise.
	// NVML is loaded from it, CDI device nodes point into it. Default "/".
	DriverRoot string
	// SysfsRoot is the sysfs mount to read PCI topology from. Empty: derived
	// as <DriverRoot>/sys.
	SysfsRoot string
	// KubeletRegistrarDir is the kubelet's plugin registration directory; it
	// must exist. Default /var/lib/kubelet/plugins_registry.
	KubeletRegistrarDir string
	// KubeletPluginDir is the driver's own data directory: the DRA gRPC
	// socket and the checkpoint live there. Empty: derived as
	// /var/lib/kubelet/plugins/<DriverName>. Created when missing.
	KubeletPluginDir string
	// CDIDir is where the per-claim CDI specs are written; the container
	// runtime must watch it. Default /var/run/cdi. Created when missing.
	CDIDir string
	// PartitionableAlpha publishes the alpha fields of partitionable
	// devices on GPUs in dynamic MIG mode: the slices'
	// partitionTypeAttribute (KEP-5677, gate DRAPartitionableDevicesType,
	// naming the <DriverName>/profile attribute) and the counter
	// consumptions' compatibilityGroups (KEP-5963, gate
	// DRADeviceCompatibilityGroups). The apiserver rejects or drops them
	// while the gates are off. Default false.
	PartitionableAlpha bool
	// Kubeconfig is the path of a kubeconfig file; empty means the in-cluster
	// configuration (service account, KUBERNETES_SERVICE_HOST/PORT).
	Kubeconfig string
}

// DefaultConfig returns the defaults for a driver on a standard node. NodeName
// is left empty: it must come from the environment (the DaemonSet's
// spec.nodeName).
func DefaultConfig() Config {
	return Config{
		DriverName:          DefaultDriverName,
		DriverRoot:          "/",
		KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir,
		CDIDir:              DefaultCDIDir,
	}
}

// EffectiveSysfsRoot returns SysfsRoot, or <DriverRoot>/sys when it is empty.
func (c *Config) EffectiveSysfsRoot() string {
	if c.SysfsRoot != "" {
		return c.SysfsRoot
	}
	return filepath.Join(c.DriverRoot, "sys")
}

// EffectiveKubeletPluginDir returns KubeletPluginDir, or
// /var/lib/kubelet/plugins/<DriverName> when it is empty.
func (c *Config) EffectiveKubeletPluginDir() string {
	if c.KubeletPluginDir != "" {
		return c.KubeletPluginDir
	}
	return filepath.Join(kubeletplugin.KubeletPluginsDir, c.DriverName)
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	if msgs := validation.IsDNS1123Subdomain(c.DriverName); len(msgs) > 0 {
		return fmt.Errorf("%w: DriverName %q: %s", ErrInvalidConfig, c.DriverName, strings.Join(msgs, "; "))
	}
	if len(c.DriverName) > 63 {
		return fmt.Errorf("%w: DriverName %q is longer than 63 characters", ErrInvalidConfig, c.DriverName)
	}
	if c.NodeName == "" {
		return fmt.Errorf("%w: NodeName is required", ErrInvalidConfig)
	}
	// The pool is named after the node; pool names are DNS subdomains.
	if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		return fmt.Errorf("%w: NodeName %q is not usable as a pool name: %s", ErrInvalidConfig, c.NodeName, strings.Join(msgs, "; "))
	}
	for _, p := range []struct{ field, value string }{
		{"DriverRoot", c.DriverRoot},
		{"KubeletRegistrarDir", c.KubeletRegistrarDir},
		{"CDIDir", c.CDIDir},
	} {
		if !filepath.IsAbs(p.value) {
			return fmt.Errorf("%w: %s %q must be an absolute path", ErrInvalidConfig, p.field, p.value)
		}
	}
	for _, p := range []struct{ field, value string }{
		{"SysfsRoot", c.SysfsRoot},
		{"KubeletPluginDir", c.KubeletPluginDir},
	} {
		if p.value != "" && !filepath.IsAbs(p.value) {
			return fmt.Errorf("%w: %s %q must be an absolute path or empty", ErrInvalidConfig, p.field, p.value)
		}
	}
	registration, dra := pluginharness.Sockets(c.KubeletRegistrarDir, c.EffectiveKubeletPluginDir(), c.DriverName)
	if len(registration) > pluginharness.MaxSocketPath {
		return fmt.Errorf("%w: KubeletRegistrarDir %q: registration socket %s is longer than %d bytes (AF_UNIX limit)",
			ErrInvalidConfig, c.KubeletRegistrarDir, registration, pluginharness.MaxSocketPath)
	}
	if len(dra) > pluginharness.MaxSocketPath {
		return fmt.Errorf("%w: KubeletPluginDir %q: DRA socket %s is longer than %d bytes (AF_UNIX limit)",
			ErrInvalidConfig, c.EffectiveKubeletPluginDir(), dra, pluginharness.MaxSocketPath)
	}
	return nil
}
