package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

func init() { register(newConformanceCommand) }

// envOr returns the environment variable's value, or def when it is unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func newConformanceCommand() *cobra.Command {
	cfg := conformance.DefaultConfig()
	cfg.Kubeconfig = os.Getenv("DRAKIT_KUBECONFIG")
	cfg.NodeCDIDir = os.Getenv("DRAKIT_CDI_DIR")
	cfg.NodeEmulatorRoot = os.Getenv("DRAKIT_EMULATOR_ROOT")
	cfg.NodeKubeletRootDir = os.Getenv("DRAKIT_KUBELET_ROOT_DIR")
	cfg.ArtifactsDir = envOr("ARTIFACTS", cfg.ArtifactsDir)
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the conformance features against a cluster and a DRA driver",
		Long: `Runs drakit's Gherkin features (one directory per KEP) against the cluster of
--kubeconfig and the DRA driver --driver. For every scenario the kit compares
what the API server stored (claim allocations, the driver's ResourceSlices)
with what a probe pod's container sees (GPU device nodes, MIG capability
nodes, NVML with its MIG devices, environment).

Features: @kep-4381 structured parameters, @kep-4815 partitionable devices
(GPU partitions such as MIG: --partition-class, --profile-attribute,
--parent-uuid-attribute, --memory-capacity), @kep-5677 and @kep-5963 (alpha
partition types and compatibility groups). Malformed pools are published by
the kit for its own test driver, test-driver.conformance.drakit.dev.

Writes junit.xml, cucumber.json, summary.txt and diagnostics/ of failed
scenarios to --artifacts and prints the summary per KEP tag. Exits non-zero
when a scenario failed, was undefined or pending, or none ran, and with
--fail-on-skip when one was skipped. Skipped scenarios (capabilities the
cluster or driver lack) are listed with their reason and never counted as
passed.`,
		Example: `  drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --node-cdi-dir "$DRAKIT_CDI_DIR"
  drakit conformance --kubeconfig ~/.kube/config --driver gpu.example.com --tags '@kep-4381' --hardware
  drakit conformance --kubeconfig ~/.kube/config --driver gpu.nvidia.com --device-class gpu.nvidia.com \
    --partition-class mig.nvidia.com --tags '@kep-4381,@kep-4815' --hardware`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Output = cmd.OutOrStdout()
			if cfg.DriverConfig != "" {
				d, err := declaration.Load(cfg.DriverConfig)
				if err != nil {
					return err
				}
				cfg.ApplyDeclaration(d, func(field string) bool { return cmd.Flags().Changed(declaredFlags[field]) })
			}
			res, err := conformance.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if !res.OK() {
				return errors.New(failureLine(res))
			}
			return nil
		},
	}
	bindConformanceFlags(cmd.Flags(), &cfg)
	return cmd
}

// declaredFlags are the flags of the Config fields a driver declaration
// sets (conformance.DeclaredFields): given on the command line, they win
// over the declaration.
var declaredFlags = map[string]string{
	"DriverName": "driver", "DeviceClassName": "device-class", "UUIDAttribute": "uuid-attribute",
	"DeviceEnvPrefix": "device-env-prefix", "DeviceEnvName": "device-env-name", "DeviceEnvValue": "device-env-value",
	"PartitionClassName": "partition-class", "ProfileAttribute": "profile-attribute",
	"ParentUUIDAttribute": "parent-uuid-attribute", "MemoryCapacity": "memory-capacity", "DriverNamespace": "driver-namespace",
	"DriverPodSelector": "driver-pod-selector", "Hardware": "hardware", "Observers": "observers",
}

// bindConformanceFlags maps the flags 1:1 onto cfg; cfg's values are the
// defaults.
func bindConformanceFlags(f *pflag.FlagSet, cfg *conformance.Config) {
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", cfg.Kubeconfig, "kubeconfig of the cluster under test ($DRAKIT_KUBECONFIG)")
	f.StringVar(&cfg.DriverConfig, "driver-config", cfg.DriverConfig, "driver declaration (conformance.drakit.dev/v1alpha1 DriverDeclaration, see docs/examples/): sets every driver flag below not given explicitly")
	f.StringSliceVar(&cfg.Observers, "observers", cfg.Observers, "the driver's observers: cdi, env, deviceNodes, mounts, nvml (NVML and NVIDIA device node checks need nvml; default none)")
	f.StringVar(&cfg.DriverName, "driver", cfg.DriverName, "name of the DRA driver under test")
	f.StringVar(&cfg.DeviceClassName, "device-class", cfg.DeviceClassName, "DeviceClass the kit's claims request (default: named like the driver)")
	f.StringVar(&cfg.UUIDAttribute, "uuid-attribute", cfg.UUIDAttribute, "device attribute holding the GPU UUID (bare name in the driver's domain, or domain/name)")
	f.StringVar(&cfg.DeviceEnvPrefix, "device-env-prefix", cfg.DeviceEnvPrefix, "prefix of the per-device environment variables the driver sets (empty: none, those scenarios are skipped)")
	f.StringVar(&cfg.DeviceEnvName, "device-env-name", cfg.DeviceEnvName, "per-device environment variable name as a pattern ({device}, {identity}, {attribute:NAME}), e.g. GPU_DEVICE_{attribute:index}; instead of --device-env-prefix")
	f.StringVar(&cfg.DeviceEnvValue, "device-env-value", cfg.DeviceEnvValue, "its value as a pattern (default {identity})")
	f.StringVar(&cfg.PartitionClassName, "partition-class", cfg.PartitionClassName, "DeviceClass of the driver's GPU partitions (MIG devices, KEP-4815; empty: partition scenarios are skipped)")
	f.StringVar(&cfg.ProfileAttribute, "profile-attribute", cfg.ProfileAttribute, "string attribute naming a partition's profile, e.g. 1g.5gb")
	f.StringVar(&cfg.ParentUUIDAttribute, "parent-uuid-attribute", cfg.ParentUUIDAttribute, "string attribute of a partition holding its GPU's UUID")
	f.StringVar(&cfg.MemoryCapacity, "memory-capacity", cfg.MemoryCapacity, "device capacity holding the memory size in bytes")
	f.StringVar(&cfg.ProbeImage, "probe-image", cfg.ProbeImage, "image holding drakit-probe")
	f.StringVar(&cfg.ProbeBinary, "probe-binary", cfg.ProbeBinary, "path of drakit-probe in the probe image")
	f.StringVar((*string)(&cfg.ImagePullPolicy), "image-pull-policy", string(cfg.ImagePullPolicy), "image pull policy of the probe pods (Always, IfNotPresent, Never)")
	f.StringVar(&cfg.APIServerHost, "apiserver-host", cfg.APIServerHost, "KUBERNETES_SERVICE_HOST for probe pods (default: the kubeconfig server's host)")
	f.IntVar(&cfg.APIServerPort, "apiserver-port", cfg.APIServerPort, "KUBERNETES_SERVICE_PORT for probe pods (default: the kubeconfig server's port)")
	f.StringVar(&cfg.NodeKubeletRootDir, "node-kubelet-root-dir", cfg.NodeKubeletRootDir, "the node's kubelet root dir, readable from here ($DRAKIT_KUBELET_ROOT_DIR; empty: scenarios that compare the container with the CDI edits the driver prepared are skipped)")
	f.StringVar(&cfg.NodeEmulatorRoot, "node-emulator-root", cfg.NodeEmulatorRoot, "the node's emulated hardware root, reachable from here ($DRAKIT_EMULATOR_ROOT; empty: scenarios that catch the driver mid-prepare are skipped)")
	f.StringVar(&cfg.NodeCDIDir, "node-cdi-dir", cfg.NodeCDIDir, "the node's CDI spec directory, readable from here ($DRAKIT_CDI_DIR; empty: CDI scenarios are skipped)")
	f.StringVar(&cfg.DriverNamespace, "driver-namespace", cfg.DriverNamespace, "namespace of the driver's pods, for diagnostics (empty: all namespaces)")
	f.StringVar(&cfg.DriverPodSelector, "driver-pod-selector", cfg.DriverPodSelector, "label selector of the driver's pods, for diagnostics (empty: no driver logs)")
	f.StringVar(&cfg.Tags, "tags", cfg.Tags, `godog tag filter, e.g. "@kep-4381 && ~@slow" (empty: all scenarios)`)
	f.StringVar(&cfg.Profile, "profile", cfg.Profile, "run the scenarios of one conformance profile that --tags selects: "+strings.Join(report.ProfileNames(), ", ")+" (empty: every profile)")
	f.BoolVar(&cfg.FailOnSkip, "fail-on-skip", cfg.FailOnSkip, "a skipped scenario fails the run (for a driver that must support every selected feature)")
	f.BoolVar(&cfg.Hardware, "hardware", cfg.Hardware, "the driver manages real GPUs, not drakit's emulator: skip @emulator scenarios")
	f.StringVar(&cfg.ArtifactsDir, "artifacts", cfg.ArtifactsDir, "directory for junit.xml, cucumber.json, summary.txt and diagnostics ($ARTIFACTS)")
	f.DurationVar(&cfg.Timeouts.API, "api-timeout", cfg.Timeouts.API, "bound of the preflight and of namespace setup")
	f.DurationVar(&cfg.Timeouts.Publish, "publish-timeout", cfg.Timeouts.Publish, "how long to wait for the driver's ResourceSlices")
	f.DurationVar(&cfg.Timeouts.PodStart, "pod-start-timeout", cfg.Timeouts.PodStart, "how long to wait for a pod to run or be found unschedulable")
	f.DurationVar(&cfg.Timeouts.PodDelete, "pod-delete-timeout", cfg.Timeouts.PodDelete, "how long to wait for a deleted pod to go away")
	f.DurationVar(&cfg.Timeouts.Cleanup, "cleanup-timeout", cfg.Timeouts.Cleanup, "how long to wait for claims and CDI specs to be released and deleted")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "scenarios run at once (they compete for the node's devices)")
	f.Int64Var(&cfg.Randomize, "random", cfg.Randomize, "shuffle scenarios with this seed (0: written order, -1: pick a seed)")
	f.StringVar(&cfg.Format, "format", cfg.Format, "progress output: pretty or progress")
	f.BoolVar(&cfg.NoColors, "no-colors", cfg.NoColors, "no ANSI colors in the progress output")
}

// failureLine is the error the command exits with when scenarios failed;
// the summary above it has the details.
func failureLine(res conformance.Result) string {
	if res.Total() == 0 {
		return "conformance: no scenario ran"
	}
	return fmt.Sprintf("conformance failed: %d of %d scenarios failed, %d undefined, %d pending (%d skipped)",
		res.Failed, res.Total(), res.Undefined, res.Pending, res.Skipped)
}
