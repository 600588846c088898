package conformance

import (
	"flag"
	"strings"

	"drakit.dev/drakit/conformance/report"
)

// ScenarioFlags binds the run settings that every scenario reads (the
// node's paths the kit can see, the probe pods, the waits, the verdict's
// strictness) to flags of a new flag set, with cfg's values as defaults:
// one list for every front end (drakit conformance, the Ginkgo suite's
// --drakit.* flags). The client flags (kubeconfig, context, request
// timeout) and the driver's (declaration.Flags) are bound apart.
func ScenarioFlags(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("scenario settings", flag.ContinueOnError)
	fs.StringVar(&cfg.ArtifactsDir, "artifacts", cfg.ArtifactsDir, "directory for junit.xml, cucumber.json, summary.txt, conformance-report.yaml and diagnostics ($ARTIFACTS)")
	fs.StringVar(&cfg.NodeCDIDir, "node-cdi-dir", cfg.NodeCDIDir, "the node's CDI spec directory, readable from here ($DRAKIT_CDI_DIR; empty: CDI scenarios are skipped)")
	fs.StringVar(&cfg.NodeEmulatorRoot, "node-emulator-root", cfg.NodeEmulatorRoot, "the node's emulated hardware root, reachable from here ($DRAKIT_EMULATOR_ROOT; the driver's fault command gets it as $DRAKIT_EMULATOR_ROOT; empty: scenarios that catch the driver mid-prepare are skipped)")
	fs.StringVar(&cfg.NodeKubeletRootDir, "node-kubelet-root-dir", cfg.NodeKubeletRootDir, "the node's kubelet root dir, readable from here ($DRAKIT_KUBELET_ROOT_DIR; empty: scenarios that compare the container with the CDI edits the driver prepared are skipped)")
	fs.StringVar(&cfg.NodeSysfsRoot, "node-sysfs", cfg.NodeSysfsRoot, "the node's /sys, readable from here (drakit's emulated node: $DRAKIT_EMULATOR_ROOT/sys; empty: the inventory lint rule is skipped)")
	fs.StringVar(&cfg.NodeCgroupRoot, "node-cgroup-root", cfg.NodeCgroupRoot, "the node's cgroup file system (/sys/fs/cgroup), readable from here; empty: the pod cgroup scenarios are skipped")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "the node whose CDI dir, kubelet root dir and sysfs the kit reads (default: the cluster's only node)")
	fs.StringVar(&cfg.Interpose, "interpose", cfg.Interpose, "control address of drakit interpose between the kubelet and the driver (a unix socket or 127.0.0.1:PORT; empty: @interpose scenarios are skipped)")
	fs.StringVar(&cfg.ProbeImage, "probe-image", cfg.ProbeImage, "image holding drakit-probe")
	fs.StringVar(&cfg.ProbeBinary, "probe-binary", cfg.ProbeBinary, "path of drakit-probe in the probe image")
	fs.StringVar((*string)(&cfg.ImagePullPolicy), "image-pull-policy", string(cfg.ImagePullPolicy), "image pull policy of the probe pods (Always, IfNotPresent, Never)")
	fs.BoolVar(&cfg.ProbeHostNetwork, "probe-host-network", cfg.ProbeHostNetwork, "run the probe pods with hostNetwork, for a cluster without a pod network (drakit's local cluster; --provider local sets it)")
	fs.StringVar(&cfg.APIServerHost, "apiserver-host", cfg.APIServerHost, "KUBERNETES_SERVICE_HOST for probe pods (default: the kubeconfig server's host)")
	fs.IntVar(&cfg.APIServerPort, "apiserver-port", cfg.APIServerPort, "KUBERNETES_SERVICE_PORT for probe pods (default: the kubeconfig server's port)")
	fs.BoolVar(&cfg.FailOnSkip, "fail-on-skip", cfg.FailOnSkip, "a skipped Extended scenario or cluster check keeps the kit from certifying the driver too, as a skipped Core one always does (exit 3; for a driver that must support every selected feature)")
	fs.BoolVar(&cfg.NoColors, "no-colors", cfg.NoColors, "no ANSI colors in the progress output")
	fs.DurationVar(&cfg.Timeouts.API, "api-timeout", cfg.Timeouts.API, "bound of the preflight and of namespace setup")
	fs.DurationVar(&cfg.Timeouts.Publish, "publish-timeout", cfg.Timeouts.Publish, "how long to wait for the driver's ResourceSlices")
	fs.DurationVar(&cfg.Timeouts.PodStart, "pod-start-timeout", cfg.Timeouts.PodStart, "how long to wait for a pod to run or be found unschedulable")
	fs.DurationVar(&cfg.Timeouts.PodDelete, "pod-delete-timeout", cfg.Timeouts.PodDelete, "how long to wait for a deleted pod to go away")
	fs.DurationVar(&cfg.Timeouts.Cleanup, "cleanup-timeout", cfg.Timeouts.Cleanup, "how long to wait for claims and CDI specs to be released and deleted")
	fs.DurationVar(&cfg.Timeouts.SchedulerBinding, "scheduler-binding-timeout", cfg.Timeouts.SchedulerBinding, "the cluster's kube-scheduler DynamicResources bindingTimeout (upstream's default 10m; drakit's local cluster 30s): how long a claim whose binding conditions never hold keeps its allocation")
	fs.DurationVar(&cfg.Timeouts.FaultCommand, "fault-command-timeout", cfg.Timeouts.FaultCommand, "how long each run of the driver's fault command (deviceKinds[].faultCommand) may take")
	return fs
}

// SelectionFlags binds the settings of a whole run, which a front end that
// picks and runs the scenarios itself (a Session) has no use for: which
// scenarios, how many at once, in which order, with which output.
func SelectionFlags(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("run settings", flag.ContinueOnError)
	fs.StringVar(&cfg.Tags, "tags", cfg.Tags, `godog tag filter, e.g. "@kep-4381 && ~@slow" (empty: the declaration's scenarios.tags, else all scenarios)`)
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "run the scenarios of one conformance profile that --tags selects: "+strings.Join(report.ProfileNames(), ", ")+" (empty: every profile)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "scenarios run at once (they compete for the node's devices)")
	fs.Int64Var(&cfg.Randomize, "random", cfg.Randomize, "shuffle scenarios with this seed (0: written order, -1: pick a seed)")
	fs.StringVar(&cfg.Format, "format", cfg.Format, "progress output: pretty or progress")
	return fs
}
