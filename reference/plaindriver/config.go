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

	"drakit.dev/drakit/internal/unixsocket"
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

// Style is one correct way of handing devices to containers and of
// publishing them (see the package documentation). The empty Style is
// StyleMounts.
type Style string

// The styles.
const (
	// StyleMounts: per device two environment variables and its directory
	// mounted read-only.
	StyleMounts Style = "mounts"
	// StyleEnvOnly: per device the two environment variables, nothing else.
	StyleEnvOnly Style = "env-only"
	// StyleDeviceNodes: the variables and a device node /dev/plain/<device>.
	StyleDeviceNodes Style = "device-nodes"
	// StylePartitions: every device is published whole and as partitions
	// that consume its shared counters (KEP-4815).
	StylePartitions Style = "partitions"
	// StyleConsumableCapacity: beside the devices, shared devices that
	// allow multiple allocations, each consuming part of their bandwidth
	// (KEP-5075).
	StyleConsumableCapacity Style = "consumable-capacity"
	// StyleStrictConfig: the variables only, and opaque configuration
	// decoded strictly: a config's label becomes a variable.
	StyleStrictConfig Style = "strict-config"
)

// Styles returns the styles, in the order the documentation lists them.
func Styles() []Style {
	return []Style{StyleMounts, StyleEnvOnly, StyleDeviceNodes, StylePartitions, StyleConsumableCapacity, StyleStrictConfig}
}

// Validate reports an unknown style with the list of known ones; the empty
// style is valid (StyleMounts).
func (s Style) Validate() error {
	if s == "" || slices.Contains(Styles(), s) {
		return nil
	}
	return fmt.Errorf("unknown style %q (known: %s; empty for %s)", s, joinNames(Styles()), StyleMounts)
}

// effective is s, or StyleMounts for "".
func (s Style) effective() Style {
	if s == "" {
		return StyleMounts
	}
	return s
}

// mounts says whether the style mounts each device's directory.
func (s Style) mounts() bool {
	switch s.effective() {
	case StyleMounts, StylePartitions, StyleConsumableCapacity:
		return true
	}
	return false
}

// Defect is a deliberate bug the driver can be run with, so that the
// conformance kit can be shown to catch it (see the package documentation).
// The empty Defect is a correct driver.
type Defect string

// The known defects, grouped by where the kit sees them.
const (
	// What the container gets.

	// DefectExtraDevice: a claim's CDI spec also injects the environment
	// and the mount of one device that is not allocated to the claim.
	DefectExtraDevice Defect = "extra-device"
	// DefectWrongDevice: each allocated device's CDI device injects the
	// edits of another device of the node, one not allocated to the claim.
	DefectWrongDevice Defect = "wrong-device"
	// DefectMissingEnv: no PLAIN_DEVICE_<index> variable for any device.
	DefectMissingEnv Defect = "missing-env"
	// DefectEnvWrongValue: PLAIN_DEVICE_<index> holds dev<index>, not the
	// device's name dev-<index>.
	DefectEnvWrongValue Defect = "env-wrong-value"
	// DefectMountMissing: no mount of the device's directory.
	DefectMountMissing Defect = "mount-missing"
	// DefectMountWritable: the device's directory is mounted read-write.
	DefectMountWritable Defect = "mount-writable"
	// DefectDeviceNodeMissing: no device node (style device-nodes).
	DefectDeviceNodeMissing Defect = "device-node-missing"
	// DefectExtraDeviceNode: the first CDI device also creates the device
	// node of a device not allocated to the claim (style device-nodes).
	DefectExtraDeviceNode Defect = "extra-device-node"
	// DefectNoCDIEdits: prepare succeeds without CDI device IDs.
	DefectNoCDIEdits Defect = "no-cdi-edits"
	// DefectUnresolvableCDIDevice: prepare returns CDI device IDs that no
	// spec defines.
	DefectUnresolvableCDIDevice Defect = "unresolvable-cdi-device"
	// DefectConfigIgnored: opaque configuration has no effect (style
	// strict-config).
	DefectConfigIgnored Defect = "config-ignored"

	// What the API server stores.

	// DefectDuplicateDeviceNames: the pool carries one more device whose
	// name is that of dev-0.
	DefectDuplicateDeviceNames Defect = "duplicate-device-names"
	// DefectDuplicateIdentity: dev-1 publishes dev-0's serial.
	DefectDuplicateIdentity Defect = "duplicate-identity"
	// DefectAttributeType: every device publishes the standard attribute
	// resource.kubernetes.io/numaNode as a string.
	DefectAttributeType Defect = "attribute-type"
	// DefectCountersOvercommitted: each device's last partition consumes
	// more of the counter than the counter set holds (style partitions).
	DefectCountersOvercommitted Defect = "counters-overcommitted"
	// DefectCountersUnderconsumed: a whole device consumes half its
	// counters, so that it and partitions of it are allocated at once
	// (style partitions).
	DefectCountersUnderconsumed Defect = "counters-underconsumed"

	// What prepare and unprepare do.

	// DefectPrepareFails: every claim gets a per-claim error.
	DefectPrepareFails Defect = "prepare-fails"
	// DefectPrepareSlow: every prepare takes longer than the kubelet waits
	// (PrepareDelay).
	DefectPrepareSlow Defect = "prepare-slow"
	// DefectSharesRefused: a claim with a share of a device (a result with
	// a share ID) gets a per-claim error (style consumable-capacity).
	DefectSharesRefused Defect = "shares-refused"
	// DefectAdminAccessRefused: a result with admin access gets a
	// per-claim error.
	DefectAdminAccessRefused Defect = "admin-access-refused"
	// DefectNotIdempotent: preparing a prepared claim again fails.
	DefectNotIdempotent Defect = "not-idempotent"
	// DefectUnprepareFails: every unprepare fails; the claim stays
	// prepared.
	DefectUnprepareFails Defect = "unprepare-fails"
	// DefectLeaveCDISpec: unprepare forgets the claim but leaves its CDI
	// spec in the CDI directory.
	DefectLeaveCDISpec Defect = "leave-cdi-spec"
	// DefectUnprepareKeepsDevice: unprepare succeeds and removes the spec,
	// but the driver keeps the devices: every later claim for one of them
	// gets a per-claim error.
	DefectUnprepareKeepsDevice Defect = "unprepare-keeps-device"
	// DefectStateLost: the checkpoint is deleted at start, and unprepare
	// does nothing for a claim the driver does not know: after a restart
	// the specs of claims prepared before stay.
	DefectStateLost Defect = "state-lost-on-restart"
)

// defectStyles are the styles a defect needs; a defect not listed runs
// with every style.
var defectStyles = map[Defect][]Style{
	DefectMountMissing:          {StyleMounts},
	DefectMountWritable:         {StyleMounts},
	DefectDeviceNodeMissing:     {StyleDeviceNodes},
	DefectExtraDeviceNode:       {StyleDeviceNodes},
	DefectConfigIgnored:         {StyleStrictConfig},
	DefectCountersOvercommitted: {StylePartitions},
	DefectCountersUnderconsumed: {StylePartitions},
	DefectSharesRefused:         {StyleConsumableCapacity},
	DefectDuplicateDeviceNames:  {StyleMounts, StyleEnvOnly, StyleDeviceNodes, StyleStrictConfig},
}

// Defects returns the known defects, in the order the documentation lists
// them.
func Defects() []Defect {
	return []Defect{
		DefectExtraDevice, DefectWrongDevice, DefectMissingEnv, DefectEnvWrongValue, DefectMountMissing,
		DefectMountWritable, DefectDeviceNodeMissing, DefectExtraDeviceNode, DefectNoCDIEdits,
		DefectUnresolvableCDIDevice, DefectConfigIgnored,
		DefectDuplicateDeviceNames, DefectDuplicateIdentity, DefectAttributeType, DefectCountersOvercommitted,
		DefectCountersUnderconsumed,
		DefectPrepareFails, DefectPrepareSlow, DefectSharesRefused, DefectAdminAccessRefused, DefectNotIdempotent,
		DefectUnprepareFails, DefectLeaveCDISpec, DefectUnprepareKeepsDevice, DefectStateLost,
	}
}

// Validate reports an unknown defect with the list of known ones; the empty
// defect is valid.
func (d Defect) Validate() error {
	if d == "" || slices.Contains(Defects(), d) {
		return nil
	}
	return fmt.Errorf("unknown defect %q (known: %s; empty for none)", d, joinNames(Defects()))
}

// ValidateStyle reports a defect that the style cannot have (a missing
// mount in a style without mounts).
func (d Defect) ValidateStyle(s Style) error {
	want, ok := defectStyles[d]
	if !ok || slices.Contains(want, s.effective()) {
		return nil
	}
	return fmt.Errorf("defect %s needs style %s, not %s", d, joinNames(want), s.effective())
}

func joinNames[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Per-device counts of the styles with more than one device per device:
// a partitionable device is itself and its partitions, and the
// consumable-capacity style adds sharedDevices shared devices.
const (
	perPartitionable = 1 + halves + quarters
	sharedDevices    = 2
	// maxCounterSliceDevices is a slice's limit when its devices consume
	// counters.
	maxCounterSliceDevices = 64
)

// ValidateDevices reports whether the driver can publish n devices with
// style s and defect d in one ResourceSlice: between 1 and 128 devices in
// all (64 when they consume counters), one place kept for the duplicate
// of duplicate-device-names, at least 2 when a claim must be able to get a
// device it was not allocated.
func ValidateDevices(n int, s Style, d Defect) error {
	limit := resourceapi.ResourceSliceMaxDevices
	switch s.effective() {
	case StylePartitions:
		limit = maxCounterSliceDevices / perPartitionable
	case StyleConsumableCapacity:
		limit -= sharedDevices
	}
	if d == DefectDuplicateDeviceNames {
		limit--
	}
	low := 1
	switch d {
	case DefectExtraDevice, DefectWrongDevice, DefectExtraDeviceNode, DefectDuplicateIdentity:
		low = 2
	}
	if n >= low && n <= limit {
		return nil
	}
	msg := fmt.Sprintf("%d devices: must be between %d and %d", n, low, limit)
	if s != "" {
		msg += " with style " + string(s)
	}
	if d != "" {
		msg += " with defect " + string(d)
	}
	return errors.New(msg)
}

// Config configures the plain driver. Every path is a host path that must
// also be valid inside the driver's container (the DaemonSet mounts each one
// at the same path).
type Config struct {
	// Kubelet is what every driver on the harness has: its name (default
	// plain.drakit.dev), node (the serials derive from it), the kubelet's
	// directories (KubeletPluginDir holds the DRA socket), the CDI
	// directory, its HTTP endpoint and kubeconfig.
	pluginharness.Kubelet
	// Devices is how many devices the driver publishes, dev-0 to
	// dev-<Devices-1>. Default 4.
	Devices int
	// StateDir is the driver's own directory: the checkpoint and, per
	// device, devices/<device>/serial, which containers get mounted.
	// Default /var/lib/drakit/plain-driver. Created when missing.
	StateDir string
	// Style is how devices are published and handed to containers; empty
	// for StyleMounts.
	Style Style
	// Defect is the deliberate bug to run with; empty for none.
	Defect Defect
}

// validateStyle checks the style, the defect, whether the style can have
// the defect and the number of devices, naming each field.
func validateStyle(devices int, s Style, d Defect) []error {
	var errs []error
	if err := s.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Style: %w", err))
	}
	if err := d.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Defect: %w", err))
	}
	if len(errs) > 0 {
		return errs
	}
	if err := d.ValidateStyle(s); err != nil {
		return []error{fmt.Errorf("Defect: %w", err)}
	}
	if err := ValidateDevices(devices, s, d); err != nil {
		return []error{fmt.Errorf("Devices: %w", err)}
	}
	return nil
}

// DefaultConfig returns the defaults. NodeName is left empty: it comes from
// the environment (the DaemonSet's spec.nodeName).
func DefaultConfig() Config {
	return Config{
		Kubelet:  pluginharness.Kubelet{DriverName: DefaultDriverName, KubeletRegistrarDir: kubeletplugin.KubeletRegistryDir, CDIDir: DefaultCDIDir},
		Devices:  DefaultDevices,
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
	errs = append(errs, validateStyle(c.Devices, c.Style, c.Defect)...)
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
			if err := unixsocket.CheckSocketPath(s.socket); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", s.field, s.dir, err))
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
