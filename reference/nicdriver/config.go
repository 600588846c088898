package nicdriver

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
)

// DefaultDriverName is the NIC driver's name (docs/architecture.md).
const DefaultDriverName = "nic.drakit.dev"

// DefaultCDIDir is the CDI spec directory container runtimes watch by default.
const DefaultCDIDir = pluginharness.DefaultCDIDir

// DefaultVFsPerPF is how many VFs the driver publishes per PF (fewer when
// the PF supports fewer).
const DefaultVFsPerPF = 4

// MaxVFsPerPF is the largest Config.VFsPerPF.
const MaxVFsPerPF = 256

// DefaultVFTimeout bounds the wait for VFs to appear or go after a write of
// sriov_numvfs.
const DefaultVFTimeout = 20 * time.Second

// maxVFTimeout keeps a prepare inside the kubelet's 45 s call timeout.
const maxVFTimeout = 40 * time.Second

// ErrInvalidConfig classifies every error returned by Config.Validate.
var ErrInvalidConfig = errors.New("invalid NIC driver configuration")

// Config configures the NIC driver. Empty path fields marked "derived"
// take their value from other fields; use the accessor methods to read the
// effective value. Every path is a host path that must also be valid
// inside the driver's container (the DaemonSet mounts each one at the same
// path).
type Config struct {
	// Kubelet is what every driver on the harness has: its name (default
	// nic.drakit.dev), node, the kubelet's directories (KubeletPluginDir
	// holds the DRA socket and the checkpoints), the CDI directory, its
	// HTTP endpoint and kubeconfig.
	pluginharness.Kubelet
	// HostRoot is the root the node's sysfs and device nodes are found
	// below: "/" on a real node, the emulator root otherwise. CDI device
	// nodes (/dev/infiniband/uverbs<N>) point into <HostRoot>/dev.
	// Default "/".
	HostRoot string
	// SysfsRoot is the sysfs mount the NICs are discovered in and VFs are
	// created through (sriov_numvfs is written): it must be writable.
	// Empty: derived as <HostRoot>/sys.
	SysfsRoot string
	// VFsPerPF is how many VFs of each PF are published (and created,
	// all at once, when the first of them is prepared): at most the PF's
	// sriov_totalvfs, at most MaxVFsPerPF; 0 publishes none. A PF that
	// already has VFs the driver did not create publishes no more than it
	// has. Default DefaultVFsPerPF.
	VFsPerPF int
	// VFTimeout bounds the wait for VFs to appear after sriov_numvfs is
	// written (and to go after it is reset to 0); at most 40 s, inside
	// the kubelet's 45 s call timeout. Default DefaultVFTimeout.
	VFTimeout time.Duration
	// DeviceStatus makes prepare write the claim's status.devices entries
	// of this driver (KEP-4817) and unprepare remove them. Default true.
	DeviceStatus bool
	// DeviceIPs are the IP addresses (CIDR notation, e.g. 192.0.2.10/24)
	// the driver reports in networkData.ips of a device's status entries,
	// by device name. A device without one reports none: the driver
	// assigns no addresses itself.
	DeviceIPs map[string]string
}

// DefaultConfig returns the defaults for a driver on a standard node.
// NodeName is left empty: it must come from the environment (the
// DaemonSet's spec.nodeName).
func DefaultConfig() Config {
	return Config{
		Kubelet:      pluginharness.Kubelet{DriverName: DefaultDriverName, KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir, CDIDir: DefaultCDIDir},
		HostRoot:     "/",
		VFsPerPF:     DefaultVFsPerPF,
		VFTimeout:    DefaultVFTimeout,
		DeviceStatus: true,
	}
}

// EffectiveSysfsRoot returns SysfsRoot, or <HostRoot>/sys when it is empty.
func (c *Config) EffectiveSysfsRoot() string {
	if c.SysfsRoot != "" {
		return c.SysfsRoot
	}
	return filepath.Join(c.HostRoot, "sys")
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
		pluginharness.PathField{Field: "HostRoot", Value: c.HostRoot},
		pluginharness.PathField{Field: "KubeletRegistrarDir", Value: c.KubeletRegistrarDir},
		pluginharness.PathField{Field: "CDIDir", Value: c.CDIDir},
		pluginharness.PathField{Field: "SysfsRoot", Value: c.SysfsRoot, Optional: true},
		pluginharness.PathField{Field: "KubeletPluginDir", Value: c.KubeletPluginDir, Optional: true},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.VFsPerPF < 0 || c.VFsPerPF > MaxVFsPerPF {
		return fmt.Errorf("%w: VFsPerPF %d is not between 0 and %d", ErrInvalidConfig, c.VFsPerPF, MaxVFsPerPF)
	}
	if c.VFTimeout <= 0 || c.VFTimeout > maxVFTimeout {
		return fmt.Errorf("%w: VFTimeout %s is not positive and at most %s (the kubelet gives a prepare 45s)", ErrInvalidConfig, c.VFTimeout, maxVFTimeout)
	}
	for _, dev := range slices.Sorted(maps.Keys(c.DeviceIPs)) {
		if msgs := validation.IsDNS1123Label(dev); len(msgs) > 0 {
			return fmt.Errorf("%w: DeviceIPs: %q is not a device name: %s", ErrInvalidConfig, dev, strings.Join(msgs, "; "))
		}
		if err := checkCIDR(c.DeviceIPs[dev]); err != nil {
			return fmt.Errorf("%w: DeviceIPs[%s]: %w", ErrInvalidConfig, dev, err)
		}
	}
	if err := pluginharness.CheckSockets(c.KubeletRegistrarDir, c.EffectiveKubeletPluginDir(), c.DriverName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := pluginharness.CheckHTTPEndpoint(c.HTTPEndpoint); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// checkCIDR accepts an address with a prefix length in its canonical form
// (192.0.2.10/24, 2001:db8::10/64), as networkData.ips wants it.
func checkCIDR(s string) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("%q is not an IP address in CIDR notation (192.0.2.10/24)", s)
	}
	if p.String() != s {
		return fmt.Errorf("%q is not in canonical form, want %q", s, p.String())
	}
	return nil
}
