package cpudriver

import (
	"errors"
	"fmt"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
)

// Defaults (docs/architecture.md names the driver).
const (
	DefaultDriverName = "cpu.drakit.dev"
	DefaultHostRoot   = "/"
	DefaultStateDir   = "/var/lib/drakit/cpu-driver"
	DefaultCDIDir     = pluginharness.DefaultCDIDir
)

// ErrInvalidConfig classifies every error returned by Config.Validate.
var ErrInvalidConfig = errors.New("invalid cpu driver configuration")

// Config configures the CPU driver. Every path is a host path that must
// also be valid inside the driver's container (the DaemonSet mounts each one
// at the same path).
type Config struct {
	// Kubelet is what every driver on the harness has: its name (default
	// cpu.drakit.dev), node, the kubelet's directories (KubeletPluginDir
	// holds the DRA socket), the CDI directory, its HTTP endpoint and
	// kubeconfig.
	pluginharness.Kubelet
	// HostRoot is the root below which the driver reads
	// sys/devices/system/node: / on a real node, the emulator root on
	// drakit's emulated one. Default /.
	HostRoot string
	// StateDir holds the checkpoint. Default /var/lib/drakit/cpu-driver.
	// Created when missing.
	StateDir string
}

// DefaultConfig returns the defaults. NodeName is left empty: it comes from
// the environment (the DaemonSet's spec.nodeName).
func DefaultConfig() Config {
	return Config{
		Kubelet:  pluginharness.Kubelet{DriverName: DefaultDriverName, KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir, CDIDir: DefaultCDIDir},
		HostRoot: DefaultHostRoot,
		StateDir: DefaultStateDir,
	}
}

// EffectiveKubeletPluginDir returns KubeletPluginDir, or
// /var/lib/kubelet/plugins/<DriverName> when it is empty.
func (c *Config) EffectiveKubeletPluginDir() string {
	return pluginharness.EffectivePluginDir(c.KubeletPluginDir, c.DriverName)
}

// Validate reports every invalid field by name; the error wraps
// ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	names := pluginharness.CheckNames(c.DriverName, c.NodeName)
	if names != nil {
		errs = append(errs, names)
	}
	if err := pluginharness.CheckPaths(
		pluginharness.PathField{Field: "HostRoot", Value: c.HostRoot},
		pluginharness.PathField{Field: "StateDir", Value: c.StateDir},
		pluginharness.PathField{Field: "KubeletRegistrarDir", Value: c.KubeletRegistrarDir},
		pluginharness.PathField{Field: "KubeletPluginDir", Value: c.KubeletPluginDir, Optional: true},
		pluginharness.PathField{Field: "CDIDir", Value: c.CDIDir},
	); err != nil {
		errs = append(errs, err)
	}
	if names == nil {
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
