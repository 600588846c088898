package driver

import (
	"errors"
	"fmt"
	"path/filepath"

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
	// Kubelet is what every driver on the harness has: its name (default
	// gpu.drakit.dev), node, the kubelet's directories (KubeletPluginDir
	// holds the DRA socket and the checkpoint), the CDI directory, its HTTP
	// endpoint and kubeconfig.
	pluginharness.Kubelet
	// DriverRoot is the root of the NVIDIA driver installation: "/" on a real
	// node, the emulator root (drakit emulator render --root) otherwise.
	// NVML is loaded from it, CDI device nodes point into it. Default "/".
	DriverRoot string
	// SysfsRoot is the sysfs mount to read PCI topology from. Empty: derived
	// as <DriverRoot>/sys.
	SysfsRoot string
	// PartitionableAlpha publishes the alpha fields of partitionable
	// devices on GPUs in dynamic MIG mode: the slices'
	// partitionTypeAttribute (KEP-4815, alpha gate DRAPartitionableDevicesType,
	// naming the <DriverName>/profile attribute) and the counter
	// consumptions' compatibilityGroups (KEP-5963, gate
	// DRADeviceCompatibilityGroups). The apiserver rejects or drops them
	// while the gates are off. Default false.
	PartitionableAlpha bool
	// DeviceMetadata has the kubelet plugin helper write device metadata
	// files (KEP-5304): every container that uses a request of a prepared
	// claim reads its GPUs' pool, name and published attributes from
	// /var/run/kubernetes.io/dra-device-attributes, bind-mounted through a
	// CDI spec in CDIDir. Default false.
	DeviceMetadata bool
	// BindingConditions publishes every device with the binding conditions
	// of KEP-5007 (BindingConditionTypes): the scheduler binds a pod that
	// got one of the devices only once an attach controller outside the
	// driver sets <DriverName>/attached True in the claim's status.devices,
	// and gives up on the device when it sets <DriverName>/attach-failed.
	// The driver itself never sets them. Default false.
	BindingConditions bool
	// ListAttributes publishes on every device the int list attribute
	// closeNUMANodes (KEP-5491, alpha gate DRAListTypeAttributes): the
	// NUMA node of its PCI function first, then the same-socket nodes at
	// the minimum SLIT distance, as the list form of the standard numaNode
	// has them. A cluster without the gate drops the list and rejects the
	// slice. Default false.
	ListAttributes bool
	// DeviceNodesOnly makes a claim's CDI edits only its devices' nodes
	// and /dev/nvidiactl: no NVML library, no NVML state, no
	// DRAKIT_DEVICE_<DEVICE> variables. The node's container stack then
	// provides NVML, as it does for a third-party driver that leaves the
	// libraries to it (on drakit's emulated nodes: emulator/nri). Default
	// false.
	DeviceNodesOnly bool
}

// DefaultConfig returns the defaults for a driver on a standard node. NodeName
// is left empty: it must come from the environment (the DaemonSet's
// spec.nodeName).
func DefaultConfig() Config {
	return Config{
		Kubelet:    pluginharness.Kubelet{DriverName: DefaultDriverName, KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir, CDIDir: DefaultCDIDir},
		DriverRoot: "/",
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
	return pluginharness.EffectivePluginDir(c.KubeletPluginDir, c.DriverName)
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	if err := pluginharness.CheckNames(c.DriverName, c.NodeName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := pluginharness.CheckPaths(
		pluginharness.PathField{Field: "DriverRoot", Value: c.DriverRoot},
		pluginharness.PathField{Field: "KubeletRegistrarDir", Value: c.KubeletRegistrarDir},
		pluginharness.PathField{Field: "CDIDir", Value: c.CDIDir},
		pluginharness.PathField{Field: "SysfsRoot", Value: c.SysfsRoot, Optional: true},
		pluginharness.PathField{Field: "KubeletPluginDir", Value: c.KubeletPluginDir, Optional: true},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := pluginharness.CheckSockets(c.KubeletRegistrarDir, c.EffectiveKubeletPluginDir(), c.DriverName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := pluginharness.CheckHTTPEndpoint(c.HTTPEndpoint); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
