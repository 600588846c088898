package kit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/interpose"
	"drakit.dev/drakit/conformance/report"
)

// Defaults of Config: the kit's own settings. Everything about the driver
// under test comes from its declaration (--driver-config) or from flags;
// the reference driver's settings live in docs/examples/reference-driver.yaml.
const (
	DefaultProbeImage   = "drakit.dev/probe:dev"
	DefaultProbeBinary  = "/usr/bin/drakit-probe"
	DefaultArtifactsDir = "artifacts"
	// EmulatorTag marks scenarios that need drakit's hardware emulator;
	// with Config.Hardware they are skipped.
	EmulatorTag = "@emulator"
)

// Config is everything a conformance run needs. Start from DefaultConfig;
// the drakit conformance command maps its flags 1:1 onto these fields.
type Config struct {
	// Kubeconfig is the path of the kubeconfig for the cluster under test.
	// Required.
	Kubeconfig string
	// KubeContext is the kubeconfig's context the kit's clients use; empty:
	// its current-context. As kubectl's --context.
	KubeContext string
	// RequestTimeout bounds every request of the kit's clients to the API
	// server, watches included, as kubectl's --request-timeout; 0: no
	// bound but those of Timeouts (the preflight's is the smaller of the
	// two). It is the kit's own: probe pods and the other objects the kit
	// creates in the cluster do not get it.
	RequestTimeout time.Duration
	// DriverName is the DRA driver under test, as in ResourceSlice
	// spec.driver and in allocation results. Required.
	DriverName string
	// DriverVersion is the driver's version for the report; empty: the
	// images of the driver's pods, when DriverPodSelector finds them.
	DriverVersion string
	// Capabilities are the optional capabilities the driver claims
	// (declaration.CapabilityName values). A scenario that needs an
	// unclaimed one is skipped as such, unless the driver's slices show
	// the capability: then it fails. A PartitionClassName claims
	// partitionableDevices.
	Capabilities []string
	// DeviceClassName is the DeviceClass the kit's claims request. Empty
	// means a class named like the driver.
	DeviceClassName string
	// UUIDAttribute is the string attribute whose value names exactly one
	// device (a GPU's UUID): a bare name (in the driver's domain) or
	// domain/name. The kit pins devices with it and compares it with what
	// the container shows (the UUIDs NVML reports). Required.
	UUIDAttribute string
	// DeviceEnvPrefix is the prefix of the environment variables the driver
	// sets per allocated device: <prefix><DEVICE>=<uuid>, the device name
	// upper-cased with every character other than A-Z and 0-9 replaced by
	// "_" (the reference driver's convention). Empty means the driver has no
	// such convention; the scenarios that check it are then skipped.
	DeviceEnvPrefix string
	// PartitionClassName is the DeviceClass of the driver's GPU partitions
	// (MIG devices), the counter-consuming devices of KEP-4815. Empty means
	// the driver has no partitions; the partition scenarios are then skipped.
	PartitionClassName string
	// ProfileAttribute is the string attribute naming a partition's profile
	// (for MIG "1g.5gb", "3g.20gb", …); the kit groups partitions by it and
	// picks profiles by what their counters allow (conformance/inventory
	// roles), and with the nvml observer expects NVML to name the MIG
	// device "<GPU> MIG <profile>". Required with PartitionClassName.
	ProfileAttribute string
	// ParentUUIDAttribute is the string attribute of a partition that holds
	// the identity of its parent (the UUIDAttribute of that GPU's whole
	// device). Required with PartitionClassName.
	ParentUUIDAttribute string
	// MemoryCapacity is the device capacity that holds a device's memory in
	// bytes: a bare name in the driver's domain or domain/name. Empty: the
	// scenarios that select devices by memory are skipped.
	MemoryCapacity string
	// ProbeImage holds drakit-probe; ProbeBinary is its path in the image.
	ProbeImage  string
	ProbeBinary string
	// ImagePullPolicy of the probe pods. Never suits images imported into
	// the node's container runtime.
	ImagePullPolicy corev1.PullPolicy
	// APIServerHost and APIServerPort are what the probe pods get as
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, so that nothing in
	// them uses the service network (local-cluster.md §14). Empty and 0 mean
	// the host and port of the kubeconfig's server URL.
	APIServerHost string
	APIServerPort int
	// NodeCDIDir is the node's CDI spec directory (containerd's
	// cdi_spec_dirs), readable by the kit. Empty means the kit cannot see
	// the node's file system: scenarios that check CDI specs are skipped,
	// with that reason, never passed.
	NodeCDIDir string
	// NodeEmulatorRoot is the root of the node's emulated hardware (drakit
	// emulator render --root), reachable by the kit on the node. There the
	// kit holds the emulator's NVML state lock to catch a driver in the
	// middle of a MIG change. Empty means the kit cannot: those scenarios
	// are skipped, with that reason.
	NodeEmulatorRoot string
	// NodeKubeletRootDir is the kubelet's root dir on the node, readable by
	// the kit: its DRA checkpoint records what the driver's
	// NodePrepareResources returned for each claim (devices and CDI device
	// IDs). Empty means the kit cannot see it: scenarios that compare the
	// container with the prepared CDI edits are skipped, with that reason.
	NodeKubeletRootDir string
	// NodeHostPaths maps a directory of the node's file system to where
	// the kit sees it (kind mounts a host directory at the node's emulator
	// root and kubelet root dir): paths the node's programs name, such as a
	// registered plugin endpoint or a CDI device node's host path, are read
	// there. Empty: the node's paths are the kit's (the local cluster).
	NodeHostPaths map[string]string
	// NodeSysfsRoot is the node's /sys, readable by the kit (on drakit's
	// emulated node <emulator root>/sys, on a real node /sys): the lint
	// rule "inventory" compares the driver's devices with its PCI
	// functions. Empty skips that rule, with the reason.
	NodeSysfsRoot string
	// NodeCgroupRoot is the mount point of the node's cgroup file system,
	// readable by the kit (/sys/fs/cgroup on the node): the kit finds a
	// pod's cgroup below it (in the cpu hierarchy on cgroup v1) and reads
	// what the kubelet set. Empty skips the scenarios that check pod
	// cgroups, with the reason.
	NodeCgroupRoot string
	// NodeName is the node whose CDI dir, kubelet root dir and sysfs the
	// kit reads; empty means the cluster's only node.
	NodeName string
	// Interpose is the control address (a unix socket path or
	// 127.0.0.1:PORT) of drakit interpose sitting between the node's
	// kubelet and the driver: the @interpose scenarios arm its faults,
	// read its records and call the driver through it. Empty means there
	// is none: those scenarios are skipped, with that reason.
	Interpose string
	// PCIVendor and PCIClass say which of the node's PCI functions are the
	// driver's devices (declaration deviceKinds[].pci): a vendor ID of four
	// hex digits, a class code prefix of two, four or six.
	PCIVendor, PCIClass string
	// DeviceEnvName and DeviceEnvValue are the driver's per-device
	// environment variable as patterns (conformance/declaration syntax:
	// {device}, {identity}, {attribute:<name>}; value default {identity}),
	// for conventions DeviceEnvPrefix cannot say. Empty name: the prefix
	// decides.
	DeviceEnvName  string
	DeviceEnvValue string
	// Observers are the kit's ways of checking what a container sees that
	// the driver declares (declaration.Observer names: cdi, env,
	// deviceNodes, mounts, nvml). An undeclared observer's checks do not
	// run: the NVML and NVIDIA device node checks need nvml. env,
	// deviceNodes, mounts and nvml judge from inside the container, so
	// they decide where the kit cannot read the node.
	Observers []string
	// DeviceNodes and Mounts are the device nodes and mounts the driver
	// injects per allocated device of its whole-device kind (declaration
	// deviceKinds[].deviceNodes and mounts): what the deviceNodes and
	// mounts observers check. Each of those observers needs its list.
	DeviceNodes []declaration.DeviceNode
	Mounts      []declaration.Mount
	// ProbeHostNetwork runs the probe pods in the node's network namespace,
	// for a cluster without a pod network (drakit's local cluster has no
	// CNI, local-cluster.md §14). Default false: a real cluster's policy
	// may forbid host networking, and the probe needs no network.
	ProbeHostNetwork bool
	// SharedDeviceClassName is the DeviceClass of the driver's shared
	// devices (KEP-5075: allowMultipleAllocations), SharedIdentityAttribute
	// their identity attribute (as UUIDAttribute) and SharedCapacity the
	// consumable capacity claims share (bare name or domain/name). Empty
	// class: the KEP-5075 scenarios have no devices to share and skip.
	SharedDeviceClassName   string
	SharedIdentityAttribute string
	SharedCapacity          string
	// PCIeRootPeerClasses are DeviceClasses of other drivers whose devices
	// sit below the same PCIe root complexes as the driver's whole devices
	// (declaration deviceKinds[].pcieRootPeers). Empty: the alignment
	// scenarios skip.
	PCIeRootPeerClasses []string
	// FaultResponses are the hardware faults the kit may inject under the
	// driver's whole devices and the driver's answer to each,
	// "<fault>=<health>[/<taint effect>]" (declaration deviceKinds[].faults,
	// e.g. 48=Unhealthy/NoExecute for Xid 48). Empty: the fault scenarios
	// do not apply. Each needs FaultCommand.
	FaultResponses []string
	// FaultCommand is how the kit injects FaultResponses' faults under a
	// device and ends them (declaration deviceKinds[].faultCommand; no
	// flag): commands the kit runs on its own host, bounded by
	// Timeouts.FaultCommand. A command that fails keeps the kit from
	// certifying the driver and is no finding.
	FaultCommand *declaration.FaultCommand
	// TorusChipClassName, TorusSubsliceClassName and TorusShapeAttribute
	// are a torus driver's classes of chips and multi-host sub-slices and
	// the sub-slices' shape attribute (declaration torus). Empty: the
	// @tpu-torus scenarios skip.
	TorusChipClassName     string
	TorusSubsliceClassName string
	TorusShapeAttribute    string
	// NodeEmulatorRoots are the emulator roots of the nodes of a
	// multi-node cluster, by node name, reachable by the kit; the
	// @tpu-torus scenarios read each host's ground truth below its root.
	// A node not listed uses NodeEmulatorRoot when it is NodeName (or the
	// cluster's only node).
	NodeEmulatorRoots map[string]string
	// CliqueAttribute is the attribute naming a GPU's NVLink clique
	// (declaration fabric.cliqueAttribute); IMEXChannelClassName the
	// DeviceClass of the driver's IMEX channels (fabric.channelClass).
	// Empty: the @nvlink-fabric scenarios skip (the channel ones without a
	// class).
	CliqueAttribute      string
	IMEXChannelClassName string
	// BindingConditions and BindingFailureConditions are the binding
	// conditions (KEP-5007) every device of the driver publishes;
	// BindingConditionsSetBy says who sets them: "kit" (the kit's attach
	// controller stands in for one outside the driver) or "driver"
	// (declaration bindingConditions). Required with the capability
	// bindingConditions claimed.
	BindingConditions        []string
	BindingFailureConditions []string
	BindingConditionsSetBy   string
	// NUMANodesAttribute is the driver's int list attribute of the NUMA
	// nodes a device is close to (declaration
	// deviceKinds[].numaNodesAttribute); empty: the @kep-5491 @extended
	// scenarios skip.
	NUMANodesAttribute string
	// OpaqueConfig is the sample opaque configuration the driver accepts
	// and its effect in a container (declaration
	// deviceKinds[].opaqueConfig; no flag); nil: the scenarios that pass
	// the driver opaque configuration do not apply.
	OpaqueConfig *declaration.OpaqueConfig
	// DeviceKindNames are the declared kinds' names by their DeviceClass,
	// for the reports (declaration deviceKinds[].name; no flag).
	DeviceKindNames map[string]string
	// DriverConfig is the path of a driver declaration
	// (conformance/declaration) whose values fill every driver setting that
	// was not given explicitly; empty: none.
	DriverConfig string
	// DriverNamespace and DriverPodSelector find the driver's pods, whose
	// log tails go into the diagnostics of failed scenarios. An empty
	// namespace means all namespaces; an empty selector disables the logs.
	DriverNamespace   string
	DriverPodSelector string
	// Tags is a godog tag filter: terms joined by "&&", alternatives by
	// ",", "~" negates, for example "@kep-4381 && ~@slow". Empty runs every
	// scenario.
	Tags string
	// Profile restricts the run to the scenarios of one conformance profile
	// (one of report.ProfileNames) that Tags selects;
	// empty runs every profile.
	Profile string
	// FailOnSkip makes a skipped Extended scenario or cluster check keep
	// the kit from certifying the driver (Could not certify), as a skipped
	// Core scenario always does; skips that say the scenario does not apply
	// to the driver or the cluster is not eligible never do (report.Judge).
	// For drivers that must support every feature the run selects (make
	// conformance sets it for the reference drivers).
	FailOnSkip bool
	// Hardware says that the driver under test manages real devices rather
	// than drakit's emulator: scenarios tagged @emulator are skipped, with
	// that reason.
	Hardware bool
	// ArtifactsDir receives junit.xml, cucumber.json, summary.txt and
	// diagnostics/<scenario>.txt. Created if missing.
	ArtifactsDir string
	// Timeouts bound every wait.
	Timeouts Timeouts
	// Concurrency is how many scenarios run at once. Scenarios compete for
	// the node's devices, so values above 1 need more devices than any
	// single scenario uses.
	Concurrency int
	// Randomize shuffles the scenario order with this seed: 0 keeps the
	// written order, -1 picks a seed (printed in the summary).
	Randomize int64
	// Format is the progress output on Output: "pretty" or "progress".
	Format string
	// NoColors strips ANSI colors from Output.
	NoColors bool
	// Output receives the progress output and the summary.
	Output io.Writer
	// TestingT, when set, runs every scenario as a subtest of it.
	TestingT *testing.T
}

// Timeouts bound the kit's waits. Every wait polls and, when it times out,
// says what it was waiting for and what it saw last.
type Timeouts struct {
	// API bounds the preflight and the wait for a new namespace's default
	// ServiceAccount.
	API time.Duration
	// Publish bounds the wait for the driver's ResourceSlices.
	Publish time.Duration
	// PodStart bounds the wait for a pod to run and print its probe report,
	// or to be reported unschedulable.
	PodStart time.Duration
	// PodDelete bounds the wait for a deleted pod to disappear.
	PodDelete time.Duration
	// Cleanup bounds the waits for claims and CDI specs to be released and
	// for a scenario's objects to be deleted.
	Cleanup time.Duration
	// SchedulerBinding is the scheduler's DynamicResources bindingTimeout
	// (upstream's default: 10 minutes; drakit's local cluster: 30 s): a
	// claim whose binding conditions never hold loses its allocation only
	// after it, so the kit waits that long and PodStart more.
	SchedulerBinding time.Duration
	// FaultCommand bounds each run of the driver's fault command: a GPU
	// reset may take tens of seconds.
	FaultCommand time.Duration
}

// DefaultConfig returns the kit's defaults. The driver under test is not
// set: Kubeconfig, DriverName and UUIDAttribute are left empty for a
// declaration (ApplyDeclaration) or flags to fill.
func DefaultConfig() Config {
	return Config{
		ProbeImage:      DefaultProbeImage,
		ProbeBinary:     DefaultProbeBinary,
		ImagePullPolicy: corev1.PullNever,
		ArtifactsDir:    DefaultArtifactsDir,
		Timeouts: Timeouts{
			API:       30 * time.Second,
			Publish:   2 * time.Minute,
			PodStart:  2 * time.Minute,
			PodDelete: time.Minute,
			Cleanup:   2 * time.Minute,
			// kube-scheduler's DynamicResourcesArgs.bindingTimeout default.
			SchedulerBinding: 10 * time.Minute,
			FaultCommand:     time.Minute,
		},
		Concurrency: 1,
		Format:      "pretty",
		Output:      os.Stdout,
	}
}

// ErrInvalidConfig is wrapped by every Validate error.
var ErrInvalidConfig = errors.New("invalid conformance config")

var (
	cIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envPrefixRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pciVendorRe = regexp.MustCompile(`^[0-9a-f]{4}$`)
	pciClassRe  = regexp.MustCompile(`^([0-9a-f]{2}){1,3}$`)
)

// Validate checks every field and returns all problems at once, each naming
// its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Kubeconfig == "" {
		bad("Kubeconfig", "required: the path of the cluster's kubeconfig")
	}
	if c.RequestTimeout < 0 {
		bad("RequestTimeout", "%v must not be negative (0: no limit)", c.RequestTimeout)
	}
	if c.DriverName == "" {
		bad("DriverName", "required: the driver under test (--driver, or driver.name of a declaration given with --driver-config)")
	} else if msgs := validation.IsDNS1123Subdomain(c.DriverName); len(msgs) > 0 {
		bad("DriverName", "%q is not a DNS subdomain: %s", c.DriverName, strings.Join(msgs, "; "))
	} else if len(c.DriverName) > 63 {
		bad("DriverName", "%q is longer than 63 characters", c.DriverName)
	}
	if c.DeviceClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.DeviceClassName); len(msgs) > 0 {
			bad("DeviceClassName", "%q is not a DNS subdomain: %s", c.DeviceClassName, strings.Join(msgs, "; "))
		}
	}
	if c.UUIDAttribute == "" {
		bad("UUIDAttribute", "required: the attribute whose value names one device (--uuid-attribute, or deviceKinds[].identity.attribute of a declaration)")
	} else if err := validateAttributeName(c.UUIDAttribute); err != nil {
		bad("UUIDAttribute", "%v", err)
	}
	if c.PartitionClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.PartitionClassName); len(msgs) > 0 {
			bad("PartitionClassName", "%q is not a DNS subdomain: %s", c.PartitionClassName, strings.Join(msgs, "; "))
		}
		for _, a := range []struct{ field, flag, val string }{
			{"ProfileAttribute", "--profile-attribute", c.ProfileAttribute},
			{"ParentUUIDAttribute", "--parent-uuid-attribute", c.ParentUUIDAttribute},
		} {
			if a.val == "" {
				bad(a.field, "required with a PartitionClassName (%s, or deviceKinds[].partitions of a declaration)", a.flag)
			} else if err := validateAttributeName(a.val); err != nil {
				bad(a.field, "%v", err)
			}
		}
	}
	if c.MemoryCapacity != "" {
		if err := validateAttributeName(c.MemoryCapacity); err != nil {
			bad("MemoryCapacity", "%v", err)
		}
	}
	if c.NUMANodesAttribute != "" {
		if err := validateAttributeName(c.NUMANodesAttribute); err != nil {
			bad("NUMANodesAttribute", "%v", err)
		}
	}
	if c.SharedDeviceClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.SharedDeviceClassName); len(msgs) > 0 {
			bad("SharedDeviceClassName", "%q is not a DNS subdomain: %s", c.SharedDeviceClassName, strings.Join(msgs, "; "))
		}
		for _, a := range []struct{ field, flag, val string }{
			{"SharedIdentityAttribute", "--shared-identity-attribute", c.SharedIdentityAttribute},
			{"SharedCapacity", "--shared-capacity", c.SharedCapacity},
		} {
			if a.val == "" {
				bad(a.field, "required with a SharedDeviceClassName (%s, or deviceKinds[].sharedCapacity of a declaration)", a.flag)
			} else if err := validateAttributeName(a.val); err != nil {
				bad(a.field, "%v", err)
			}
		}
	}
	for _, peer := range c.PCIeRootPeerClasses {
		if msgs := validation.IsDNS1123Subdomain(peer); len(msgs) > 0 {
			bad("PCIeRootPeerClasses", "%q is not a DNS subdomain: %s", peer, strings.Join(msgs, "; "))
		}
	}
	responses, err := parseFaultResponses(c.FaultResponses)
	if err != nil {
		bad("FaultResponses", "%v", err)
	}
	switch {
	case len(c.FaultResponses) > 0 && c.FaultCommand == nil:
		bad("FaultCommand", "required with FaultResponses: the command the kit injects the faults with (deviceKinds[].faultCommand of a driver declaration)")
	case c.FaultCommand != nil:
		if err := c.FaultCommand.Validate(len(responses)); err != nil {
			bad("FaultCommand", "%v", err)
		}
	}
	if err := validateCapabilities(c.Capabilities); err != nil {
		bad("Capabilities", "%v", err)
	}
	if c.claims(declaration.CapabilityBindingConditions) && (len(c.BindingConditions) == 0 || len(c.BindingFailureConditions) == 0 || c.BindingConditionsSetBy == "") {
		bad("BindingConditions", "the capability bindingConditions (KEP-5007) needs the driver's condition types and who sets them (bindingConditions of a driver declaration)")
	}
	if c.DeviceEnvPrefix != "" && !envPrefixRe.MatchString(c.DeviceEnvPrefix) {
		bad("DeviceEnvPrefix", "%q is not the start of an environment variable name", c.DeviceEnvPrefix)
	}
	if c.ProbeImage == "" {
		bad("ProbeImage", "required")
	}
	if !strings.HasPrefix(c.ProbeBinary, "/") {
		bad("ProbeBinary", "%q must be an absolute path in the probe image", c.ProbeBinary)
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		bad("ImagePullPolicy", "%q is not one of Always, IfNotPresent, Never", c.ImagePullPolicy)
	}
	if c.APIServerPort < 0 || c.APIServerPort > 65535 {
		bad("APIServerPort", "%d is not a port number (0 means the kubeconfig's)", c.APIServerPort)
	}
	if c.DriverNamespace != "" {
		if msgs := validation.IsDNS1123Label(c.DriverNamespace); len(msgs) > 0 {
			bad("DriverNamespace", "%q is not a namespace name: %s", c.DriverNamespace, strings.Join(msgs, "; "))
		}
	}
	if c.NodeEmulatorRoot != "" && !filepath.IsAbs(c.NodeEmulatorRoot) {
		bad("NodeEmulatorRoot", "%q must be an absolute path", c.NodeEmulatorRoot)
	}
	for node, root := range c.NodeEmulatorRoots {
		if !filepath.IsAbs(root) {
			bad("NodeEmulatorRoots", "node %s: %q must be an absolute path", node, root)
		}
	}
	if c.DeviceEnvName != "" {
		if err := c.deviceEnv().Validate(); err != nil {
			bad("DeviceEnvName", "%v", err)
		}
	} else if c.DeviceEnvValue != "" {
		bad("DeviceEnvValue", "%q needs a DeviceEnvName", c.DeviceEnvValue)
	}
	for _, o := range c.Observers {
		if !slices.Contains(declaration.KnownObservers(), declaration.Observer(o)) {
			bad("Observers", "%q is not one of %v", o, declaration.KnownObservers())
		}
	}
	if c.observes(declaration.ObserverDeviceNodes) && len(c.DeviceNodes) == 0 {
		bad("DeviceNodes", "the deviceNodes observer needs the device nodes the driver injects per device (deviceKinds[].deviceNodes of a declaration)")
	}
	if c.observes(declaration.ObserverMounts) && len(c.Mounts) == 0 {
		bad("Mounts", "the mounts observer needs the mounts the driver injects per device (deviceKinds[].mounts of a declaration)")
	}
	for i, n := range c.DeviceNodes {
		if err := n.Validate(); err != nil {
			bad(fmt.Sprintf("DeviceNodes[%d]", i), "%v", err)
		}
	}
	for i, m := range c.Mounts {
		if err := m.Validate(); err != nil {
			bad(fmt.Sprintf("Mounts[%d]", i), "%v", err)
		}
	}
	if c.NodeSysfsRoot != "" && !filepath.IsAbs(c.NodeSysfsRoot) {
		bad("NodeSysfsRoot", "%q must be an absolute path", c.NodeSysfsRoot)
	}
	if c.NodeCgroupRoot != "" && !filepath.IsAbs(c.NodeCgroupRoot) {
		bad("NodeCgroupRoot", "%q must be an absolute path", c.NodeCgroupRoot)
	}
	if c.PCIVendor != "" && !pciVendorRe.MatchString(c.PCIVendor) {
		bad("PCIVendor", "%q is not a PCI vendor ID of four lower-case hex digits (10de)", c.PCIVendor)
	}
	if c.PCIClass != "" && !pciClassRe.MatchString(c.PCIClass) {
		bad("PCIClass", "%q is not two, four or six lower-case hex digits of a PCI class code (0302)", c.PCIClass)
	}
	if (c.PCIVendor == "") != (c.PCIClass == "") {
		bad("PCIClass", "PCIVendor and PCIClass go together (vendor %q, class %q)", c.PCIVendor, c.PCIClass)
	}
	if c.NodeName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 && net.ParseIP(c.NodeName) == nil {
			bad("NodeName", "%q is not a node name: %s", c.NodeName, strings.Join(msgs, "; "))
		}
	}
	if c.Interpose != "" {
		if _, err := interpose.NewClient(c.Interpose); err != nil {
			bad("Interpose", "%v", err)
		}
	}
	if c.NodeKubeletRootDir != "" && !filepath.IsAbs(c.NodeKubeletRootDir) {
		bad("NodeKubeletRootDir", "%q must be an absolute path", c.NodeKubeletRootDir)
	}
	for node, host := range c.NodeHostPaths {
		if !filepath.IsAbs(node) || !filepath.IsAbs(host) {
			bad("NodeHostPaths", "%q=%q: both paths must be absolute", node, host)
		}
	}
	if _, err := labels.Parse(c.DriverPodSelector); err != nil {
		bad("DriverPodSelector", "%v", err)
	}
	if err := validateTagFilter(c.Tags); err != nil {
		bad("Tags", "%v", err)
	}
	if err := report.ValidateProfile(c.Profile); err != nil {
		bad("Profile", "%v", err)
	}
	switch {
	case c.ArtifactsDir == "":
		bad("ArtifactsDir", "required")
	case strings.Contains(c.ArtifactsDir, ","):
		bad("ArtifactsDir", "%q must not contain a comma (godog separates report files with commas)", c.ArtifactsDir)
	}
	for _, d := range []struct {
		Name string
		val  time.Duration
	}{
		{"Timeouts.API", c.Timeouts.API},
		{"Timeouts.Publish", c.Timeouts.Publish},
		{"Timeouts.PodStart", c.Timeouts.PodStart},
		{"Timeouts.PodDelete", c.Timeouts.PodDelete},
		{"Timeouts.Cleanup", c.Timeouts.Cleanup},
		{"Timeouts.SchedulerBinding", c.Timeouts.SchedulerBinding},
		{"Timeouts.FaultCommand", c.Timeouts.FaultCommand},
	} {
		if d.val <= 0 {
			bad(d.Name, "%v must be positive", d.val)
		}
	}
	if c.Concurrency < 1 {
		bad("Concurrency", "%d must be at least 1", c.Concurrency)
	}
	if c.Randomize < -1 {
		bad("Randomize", "%d must be a seed, 0 (written order) or -1 (pick a seed)", c.Randomize)
	}
	if c.Format != "pretty" && c.Format != "progress" {
		bad("Format", "%q is not one of pretty, progress", c.Format)
	}
	if c.Output == nil {
		bad("Output", "required")
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}

// deviceClass is the DeviceClass the kit's claims request.
func (c Config) DeviceClass() string {
	if c.DeviceClassName != "" {
		return c.DeviceClassName
	}
	return c.DriverName
}

// validateTagFilter checks the godog tag filter syntax, whose parser panics on
// empty terms.
func validateTagFilter(filter string) error {
	if strings.TrimSpace(filter) == "" {
		return nil
	}
	for _, alt := range strings.Split(filter, ",") {
		for _, term := range strings.Split(alt, "&&") {
			t := strings.TrimSpace(term)
			t = strings.TrimPrefix(t, "~")
			t = strings.TrimPrefix(t, "@")
			if t == "" {
				return fmt.Errorf("%q has an empty term; write terms like @kep-4381, joined by \"&&\" or \",\"", filter)
			}
			if strings.ContainsAny(t, " \t@~") {
				return fmt.Errorf("%q: term %q is not a tag", filter, strings.TrimSpace(term))
			}
		}
	}
	return nil
}

// validateAttributeName accepts a device attribute name as ResourceSlices
// spell it: a C identifier, or a domain and a C identifier joined by "/".
func validateAttributeName(name string) error {
	domain, id, qualified := strings.Cut(name, "/")
	if !qualified {
		id, domain = domain, ""
	}
	if !cIdentifier.MatchString(id) || len(id) > 32 {
		return fmt.Errorf("%q: the name part must be a C identifier of at most 32 characters", name)
	}
	if qualified {
		if msgs := validation.IsDNS1123Subdomain(domain); len(msgs) > 0 || len(domain) > 63 {
			return fmt.Errorf("%q: the domain part must be a DNS subdomain of at most 63 characters", name)
		}
	}
	return nil
}
