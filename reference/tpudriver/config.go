package tpudriver

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/internal/tpuhw"
	"drakit.dev/drakit/reference/pluginharness"
)

// Defaults.
const (
	DefaultDriverName = "tpu.drakit.dev"
	DefaultStateDir   = "/var/lib/drakit/tpu-driver"
	DefaultCDIDir     = pluginharness.DefaultCDIDir
	DefaultShapes     = "2x2x2,2x2x4," + ShapeFull
	DefaultInterval   = 10 * time.Second
)

// ErrInvalidConfig classifies every error of Config.Validate and
// ControllerConfig.Validate.
var ErrInvalidConfig = errors.New("invalid TPU driver configuration")

// Config configures the TPU driver's kubelet plugin. Paths are host paths
// that are also valid inside the driver's container.
type Config struct {
	// Kubelet is what every driver on the harness has: its name (default
	// tpu.drakit.dev), node, the kubelet's directories, the CDI directory,
	// its HTTP endpoint and kubeconfig.
	pluginharness.Kubelet
	// HostRoot is the root of the node's sysfs and device nodes: "/" on a
	// real node, the emulator root otherwise. Required.
	HostRoot string
	// TPUEnvFile is the host's tpu-env (the metadata server's
	// instance/attributes/tpu-env). Empty:
	// <HostRoot>/run/drakit-emulator/metadata/instance/attributes/tpu-env.
	TPUEnvFile string
	// StateDir holds the checkpoint. Created when missing.
	StateDir string
}

// DefaultConfig returns the defaults; NodeName and HostRoot are left to
// the caller.
func DefaultConfig() Config {
	return Config{
		Kubelet:  pluginharness.Kubelet{DriverName: DefaultDriverName, KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir, CDIDir: DefaultCDIDir},
		StateDir: DefaultStateDir,
	}
}

// EffectiveKubeletPluginDir is KubeletPluginDir or the kubelet's default
// for the driver.
func (c *Config) EffectiveKubeletPluginDir() string {
	return pluginharness.EffectivePluginDir(c.KubeletPluginDir, c.DriverName)
}

// EffectiveTPUEnvFile is TPUEnvFile or its default below HostRoot.
func (c *Config) EffectiveTPUEnvFile() string {
	if c.TPUEnvFile != "" {
		return c.TPUEnvFile
	}
	return filepath.Join(c.HostRoot, tpuhw.MetadataTPUEnvRelativePath)
}

// Validate reports every invalid field by name, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	if err := pluginharness.CheckNames(c.DriverName, c.NodeName); err != nil {
		errs = append(errs, err)
	}
	if err := pluginharness.CheckPaths(
		pluginharness.PathField{Field: "HostRoot", Value: c.HostRoot},
		pluginharness.PathField{Field: "TPUEnvFile", Value: c.TPUEnvFile, Optional: true},
		pluginharness.PathField{Field: "StateDir", Value: c.StateDir},
		pluginharness.PathField{Field: "KubeletRegistrarDir", Value: c.KubeletRegistrarDir},
		pluginharness.PathField{Field: "KubeletPluginDir", Value: c.KubeletPluginDir, Optional: true},
		pluginharness.PathField{Field: "CDIDir", Value: c.CDIDir},
	); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := pluginharness.CheckSockets(c.KubeletRegistrarDir, c.EffectiveKubeletPluginDir(), c.DriverName); err != nil {
			errs = append(errs, err)
		}
	}
	if err := pluginharness.CheckHTTPEndpoint(c.HTTPEndpoint); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// ControllerConfig configures the cluster-level controller that publishes
// the sub-slice pools.
type ControllerConfig struct {
	DriverName string
	// Shapes are the sub-slice shapes published, XxYxZ or "full" (the
	// slice's topology). Default 2x2x2, 2x2x4 and full.
	Shapes []string
	// Interval is how often the node pools are read again. Default 10s.
	Interval   time.Duration
	Kubeconfig string
}

// DefaultControllerConfig returns the defaults.
func DefaultControllerConfig() ControllerConfig {
	shapes, _ := ParseShapes(DefaultShapes)
	return ControllerConfig{DriverName: DefaultDriverName, Shapes: shapes, Interval: DefaultInterval}
}

// Validate reports every invalid field by name, wrapping ErrInvalidConfig.
func (c *ControllerConfig) Validate() error {
	var errs []error
	if err := pluginharness.CheckNames(c.DriverName, "controller"); err != nil {
		errs = append(errs, err)
	}
	if len(c.Shapes) == 0 {
		errs = append(errs, errors.New("Shapes: at least one shape is required"))
	}
	for _, s := range c.Shapes {
		if _, err := ParseShapes(s); err != nil {
			errs = append(errs, fmt.Errorf("Shapes: %w", err))
		}
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("Interval %s must be positive", c.Interval))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}
