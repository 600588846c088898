package plaindriver

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
)

// Defaults (docs/architecture.md names the driver).
const (
	DefaultDriverName = "plain.drakit.dev"
	DefaultDevices    = 4
	DefaultStateDir   = "/var/lib/drakit/plain-driver"
	DefaultCDIDir     = pluginharness.DefaultCDIDir
)

// ErrInvalidConfig classifies every error returned by Config.Validate.
var ErrInvalidConfig = errors.New("invalid plain driver configuration")

// Defect is a deliberate bug the driver can be run with, so that the
// conformance kit can be shown to catch it (see the package documentation).
// The empty Defect is a correct driver.
type Defect string

// The known defects.
const (
	// DefectExtraDevice: a claim's CDI spec also injects the environment
	// and the mount of one device that is not allocated to the claim.
	DefectExtraDevice Defect = "extra-device"
	// DefectLeaveCDISpec: unprepare forgets the claim but leaves its CDI
	// spec in the CDI directory.
	DefectLeaveCDISpec Defect = "leave-cdi-spec"
	// DefectDuplicateDeviceNames: the pool carries one more device whose
	// name is that of dev-0.
	DefectDuplicateDeviceNames Defect = "duplicate-device-names"
)

// Defects returns the known defects, in the order the documentation lists
// them.
func Defects() []Defect {
	return []Defect{DefectExtraDevice, DefectLeaveCDISpec, DefectDuplicateDeviceNames}
}

// Validate reports an unknown defect with the list of known ones; the empty
// defect is valid.
func (d Defect) Validate() error {
	if d == "" || slices.Contains(Defects(), d) {
		return nil
	}
	known := make([]string, 0, len(Defects()))
	for _, k := range Defects() {
		known = append(known, string(k))
	}
	return fmt.Errorf("unknown defect %q (known: %s; empty for none)", d, strings.Join(known, ", "))
}

// ValidateDevices reports whether the driver can publish n devices with
// defect d: between 1 and 128 (one ResourceSlice), at most 127 when the
// duplicate takes a place in the slice, at least 2 when a claim must be
// able to get a device it was not allocated.
func ValidateDevices(n int, d Defect) error {
	limit := resourceapi.ResourceSliceMaxDevices
	if d == DefectDuplicateDeviceNames {
		limit--
	}
	low := 1
	if d == DefectExtraDevice {
		low = 2
	}
	if n >= low && n <= limit {
		return nil
	}
	msg := fmt.Sprintf("%d devices: must be between %d and %d", n, low, limit)
	if d != "" {
		msg += " with defect " + string(d)
	}
	return errors.New(msg)
}

// Config configures the plain driver. Every path is a host path that must
// also be valid inside the driver's container (the DaemonSet mounts each one
// at the same path).
type Config struct {
	// DriverName is the DRA driver name: a DNS subdomain of at most 63
	// characters. Default plain.drakit.dev.
	DriverName string
	// NodeName is the Node this driver runs on; the pool is named after it
	// and the serials derive from it. Required.
	NodeName string
	// Devices is how many devices the driver publishes, dev-0 to
	// dev-<Devices-1>. Default 4.
	Devices int
	// StateDir is the driver's own directory: the checkpoint and, per
	// device, devices/<device>/serial, which containers get mounted.
	// Default /var/lib/drakit/plain-driver. Created when missing.
	StateDir string
	// KubeletRegistrarDir is the kubelet's plugin registration directory;
	// it must exist. Default /var/lib/kubelet/plugins_registry.
	KubeletRegistrarDir string
	// KubeletPluginDir holds the DRA gRPC socket. Empty: derived as
	// /var/lib/kubelet/plugins/<DriverName>. Created when missing.
	KubeletPluginDir string
	// CDIDir is where the per-claim CDI specs are written; the container
	// runtime must read it. Default /var/run/cdi. Created when missing.
	CDIDir string
	// HTTPEndpoint, when set, is the loopback host:port the driver serves
	// /metrics and /healthz on (pluginharness.Config.HTTPEndpoint); empty:
	// none.
	HTTPEndpoint string
	// Kubeconfig is the path of a kubeconfig file; empty means the
	// in-cluster configuration.
	Kubeconfig string
	// Defect is the deliberate bug to run with; empty for none.
	Defect Defect
}

// DefaultConfig returns the defaults. NodeName is left empty: it comes from
// the environment (the DaemonSet's spec.nodeName).
func DefaultConfig() Config {
	return Config{
		DriverName:          DefaultDriverName,
		Devices:             DefaultDevices,
		StateDir:            DefaultStateDir,
		KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir,
		CDIDir:              DefaultCDIDir,
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
	nameOK := false
	if msgs := validation.IsDNS1123Subdomain(c.DriverName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("DriverName %q: %s", c.DriverName, strings.Join(msgs, "; ")))
	} else if len(c.DriverName) > resourceapi.DriverNameMaxLength {
		errs = append(errs, fmt.Errorf("DriverName %q is longer than %d characters", c.DriverName, resourceapi.DriverNameMaxLength))
	} else {
		nameOK = true
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	} else if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		// The pool is named after the node; pool names are DNS subdomains.
		errs = append(errs, fmt.Errorf("NodeName %q is not usable as a pool name: %s", c.NodeName, strings.Join(msgs, "; ")))
	}
	defectOK := true
	if err := c.Defect.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Defect: %w", err))
		defectOK = false
	}
	if defectOK {
		if err := ValidateDevices(c.Devices, c.Defect); err != nil {
			errs = append(errs, fmt.Errorf("Devices: %w", err))
		}
	}
	for _, p := range []struct {
		field, value string
		optional     bool
	}{
		{"StateDir", c.StateDir, false},
		{"KubeletRegistrarDir", c.KubeletRegistrarDir, false},
		{"KubeletPluginDir", c.KubeletPluginDir, true},
		{"CDIDir", c.CDIDir, false},
	} {
		if p.optional && p.value == "" {
			continue
		}
		if !filepath.IsAbs(p.value) {
			errs = append(errs, fmt.Errorf("%s %q must be an absolute path", p.field, p.value))
		}
	}
	if nameOK {
		registration, dra := pluginharness.Sockets(c.KubeletRegistrarDir, c.EffectiveKubeletPluginDir(), c.DriverName)
		for _, s := range []struct{ field, dir, socket string }{
			{"KubeletRegistrarDir", c.KubeletRegistrarDir, registration},
			{"KubeletPluginDir", c.EffectiveKubeletPluginDir(), dra},
		} {
			if len(s.socket) > pluginharness.MaxSocketPath {
				errs = append(errs, fmt.Errorf("%s %q: socket %s is longer than %d bytes (AF_UNIX limit)", s.field, s.dir, s.socket, pluginharness.MaxSocketPath))
			}
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
