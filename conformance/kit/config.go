package kit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// the drakit conformance command maps its flags 1:1 onto these fields, and
// its driver flags onto the Declaration's.
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
	// Declaration is the driver under test (conformance/declaration):
	// its name, device kinds, observers, capabilities and hardware, the one
	// source of every driver setting. Required.
	Declaration *declaration.Declaration
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
	// ProbeHostNetwork runs the probe pods in the node's network namespace,
	// for a cluster without a pod network (drakit's local cluster has no
	// CNI, local-cluster.md §14). Default false: a real cluster's policy
	// may forbid host networking, and the probe needs no network.
	ProbeHostNetwork bool
	// NodeEmulatorRoots are the emulator roots of the nodes of a
	// multi-node cluster, by node name, reachable by the kit; the
	// @tpu-torus scenarios read each host's ground truth below its root.
	// A node not listed uses NodeEmulatorRoot when it is NodeName (or the
	// cluster's only node).
	NodeEmulatorRoots map[string]string
	// Tags is a godog tag filter: terms joined by "&&", alternatives by
	// ",", "~" negates, for example "@kep-4381 && ~@slow". Empty runs the
	// declaration's scenarios.tags, or without one every scenario.
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
// set: Kubeconfig and Declaration are left for the caller.
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
	if c.Declaration == nil {
		bad("Declaration", "required: the driver under test (--driver-config, or the driver flags)")
	} else if err := c.Declaration.Validate(); err != nil {
		errs = append(errs, err)
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
	if c.NodeEmulatorRoot != "" && !filepath.IsAbs(c.NodeEmulatorRoot) {
		bad("NodeEmulatorRoot", "%q must be an absolute path", c.NodeEmulatorRoot)
	}
	for node, root := range c.NodeEmulatorRoots {
		if !filepath.IsAbs(root) {
			bad("NodeEmulatorRoots", "node %s: %q must be an absolute path", node, root)
		}
	}
	if c.NodeSysfsRoot != "" && !filepath.IsAbs(c.NodeSysfsRoot) {
		bad("NodeSysfsRoot", "%q must be an absolute path", c.NodeSysfsRoot)
	}
	if c.NodeCgroupRoot != "" && !filepath.IsAbs(c.NodeCgroupRoot) {
		bad("NodeCgroupRoot", "%q must be an absolute path", c.NodeCgroupRoot)
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
	if err := declaration.ValidateTagFilter(c.Tags); err != nil {
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
