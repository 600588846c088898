// Package conformance is drakit conformance: the conformance run against a
// cluster and a DRA driver (with --provider, around the environment
// lifecycle drakit env runs), summarize and catalogue.
package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	envcmd "drakit.dev/drakit/cmd/drakit/internal/env"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/environment"
)

// NewCommand returns drakit conformance.
func NewCommand() *cobra.Command {
	lf := envcmd.NewLifecycleFlags("existing")
	cfg := conformance.DefaultConfig()
	cfg.Kubeconfig = os.Getenv("DRAKIT_KUBECONFIG")
	cfg.NodeCDIDir = os.Getenv("DRAKIT_CDI_DIR")
	cfg.NodeEmulatorRoot = os.Getenv("DRAKIT_EMULATOR_ROOT")
	cfg.NodeKubeletRootDir = os.Getenv("DRAKIT_KUBELET_ROOT_DIR")
	cfg.ArtifactsDir = cli.EnvOr("ARTIFACTS", cfg.ArtifactsDir)
	var (
		kube         *cli.KubeFlags
		driver       *declaration.Overrides
		driverConfig string
	)
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the conformance features against a cluster and a DRA driver",
		Long: `Certifies a DRA driver: runs drakit's Gherkin features (one directory per
KEP) against the cluster of --kubeconfig and the driver a declaration
describes (--driver-config driver.yaml, see docs/examples/). The driver
flags (--driver, --uuid-attribute, …, and --set PATH=VALUE for any other
field) write the declaration's fields over the file's, or describe the
driver without a file; each flag's help names the field it writes.

For every scenario the kit compares what the API server stored (claim
allocations, the driver's ResourceSlices) with what a probe pod's container
sees. Every driver is held to the DRA contract: the container gets exactly
the CDI edits the driver prepared for the allocated devices (needs
--node-kubelet-root-dir and --node-cdi-dir, readable from here). The
observers the driver declares add device-kind ground truth: per-device
environment variables (env), NVML and NVIDIA device nodes (nvml).

Scenarios are @core (the KEP's contract) or @extended (optional capabilities,
observers, access the kit may lack); profiles group KEPs: core (KEP-4381),
partitionable (KEP-4815), pool-status (KEP-5677), alpha (the partition types
of KEP-4815 behind gate DRAPartitionableDevicesType, tagged with it, and
KEP-5963). A scenario that needs a
capability the driver does not claim is skipped as unclaimed, and fails when
the driver's slices show it anyway.

Scenarios run --concurrency at a time; each holds the devices it needs
(a whole device, or a device with its partitions), so scenarios never share
a device. On a terminal a status line shows scenario n/N and the current step.

Writes junit.xml, cucumber.json, summary.txt, conformance-report.yaml and
diagnostics/ of failed scenarios to --artifacts and prints the summary per KEP
tag. Skipped scenarios are listed with their reason and never counted as
passed. Scenarios tagged @cluster-check check the API server, scheduler or
controllers, not the driver: they are counted and listed apart and do not
make the driver's verdict (a failed one keeps the kit from certifying it).

The verdict, judged once over the scenarios the run selected, is the last
line of the summary and of the output, the verdict of
conformance-report.yaml, and the exit code:

  0  Conformant: every scenario of the driver passed (those that do not apply
     to it, it does not claim, or the cluster is not eligible for, aside)
  1  Not conformant: a scenario failed, or a capability the driver claims
     could not be checked; the findings are listed
  2  usage error: bad flags or arguments, a declaration that does not load
     or validate, an unknown profile
  3  Could not certify: a Core scenario could not run (node access or a
     declaration field missing), a step is undefined or pending, a cluster
     check failed, nothing exercised the driver, or the run could not
     reach or set up the cluster; the reasons are listed

A skipped Core scenario never yields Conformant; with --fail-on-skip a
skipped Extended scenario or cluster check does not either.

--provider sets the cluster up around the run (package environment, on
sigs.k8s.io/e2e-framework; 'drakit env up|down' runs the same lifecycle
without a run, with the same flags). existing (the default) uses the cluster of
--kubeconfig and --context as it is, once its API server answers; every
request of the kit's clients is bounded by --request-timeout (the probe pods
and other objects the kit creates in the cluster are not affected). local
creates drakit's process cluster (--nodes, --images-dir, --run-dir; a running
one is reused and left running), renders --emulator-profile on every node,
starts the emulator's sriov_numvfs watcher, deploys the --deploy reference
drivers, fills in the --node-* paths not given from node 1's, runs the
features, then stops the watcher, exports the cluster's logs to
--artifacts/logs and tears down the cluster it created unless --keep-cluster.
kind does the same in kind node containers (--kind-*). With
--reuse-environment, local and kind only find the cluster 'drakit env up'
left running, run the features against it as it is, and
export its logs: one set-up serves many runs. local and kind write their
cluster's kubeconfig, which the kit uses as written: they refuse --context
and --request-timeout.`,
		Example: `  # drakit's reference driver on the local cluster (make conformance does this):
  eval "$(drakit env status -o env)"
  drakit conformance --driver-config docs/examples/reference-driver.yaml \
    --node-cdi-dir "$DRAKIT_CDI_DIR" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR"
  # the same, the cluster created, rendered, deployed and torn down around the run:
  drakit conformance --provider local --images-dir _output/images --deploy gpu \
    --driver-config docs/examples/reference-driver.yaml --tags '@kep-4381 && @core'
  # any driver, by flags, on real hardware (a context of ~/.kube/config), one profile:
  drakit conformance --kubeconfig ~/.kube/config --context gpu-lab --request-timeout 1m \
    --driver gpu.example.com --uuid-attribute uuid \
    --observers cdi,env --device-env-name 'GPU_DEVICE_{attribute:index}' --device-env-value '{device}' \
    --hardware --profile core`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Output = cmd.OutOrStdout()
			d, err := driver.Declaration(driverConfig)
			if err != nil {
				return cli.UsageError(err)
			}
			cfg.Declaration = d
			// Bad flags are reported before any cluster is set up; the
			// kubeconfig of a cluster the provider creates is not known yet.
			check := cfg
			if lf.Provider() != "existing" && check.Kubeconfig == "" {
				check.Kubeconfig = "set by the provider"
			}
			if err := check.Validate(); err != nil {
				return cli.UsageError(err)
			}
			env, err := lf.Environment(cmd.Flags(), kube, cfg.ArtifactsDir)
			if err != nil {
				return cli.UsageError(err)
			}
			var v conformance.Verdict
			err = env.Run(cmd.Context(), envconf.New(), func(ctx context.Context, ecfg *envconf.Config) (context.Context, error) {
				run, err := withEnvironment(ctx, cfg, env, ecfg, lf.Provider(), cmd.Flags().Changed)
				if err != nil {
					return ctx, err
				}
				v, err = conformance.Run(ctx, run)
				return ctx, err
			})
			return verdictError(cmd.Context(), v, err)
		},
	}
	kube = bindConformanceFlags(cmd.Flags(), &cfg)
	driver = bindDriverFlags(cmd.Flags(), &driverConfig)
	kube.Register(cmd)
	lf.Bind(cmd.Flags())
	lf.BindReuse(cmd.Flags())
	lf.BindLocalFlags(cmd.Flags())
	cmd.AddCommand(newConformanceSummarizeCommand(), newConformanceCatalogueCommand())
	return cmd
}

// bindConformanceFlags maps the flags 1:1 onto cfg; cfg's values are the
// defaults. It returns the client flags (--kubeconfig, --context,
// --request-timeout), bound to cfg's.
func bindConformanceFlags(f *pflag.FlagSet, cfg *conformance.Config) *cli.KubeFlags {
	kube := cli.BindKubeFlagsTo(f, &cfg.Kubeconfig, &cfg.KubeContext, &cfg.RequestTimeout,
		"kubeconfig of the cluster under test ($DRAKIT_KUBECONFIG; required with --provider existing)")
	f.AddGoFlagSet(conformance.ScenarioFlags(cfg))
	f.AddGoFlagSet(conformance.SelectionFlags(cfg))
	f.StringToStringVar(&cfg.NodeEmulatorRoots, "node-emulator-roots", cfg.NodeEmulatorRoots, "emulator roots of the nodes of a multi-node cluster, <node>=<root>,…, reachable from here (the @tpu-torus scenarios read each host's ground truth; a node not listed uses --node-emulator-root when it is --node-name or the only node)")
	return kube
}

// bindDriverFlags binds the driver declaration's file (--driver-config) to
// file and the flags that write its fields (declaration.Flags, --set) to
// the Overrides it returns.
func bindDriverFlags(f *pflag.FlagSet, file *string) *declaration.Overrides {
	f.StringVar(file, "driver-config", "", "driver declaration (conformance.drakit.dev/v1alpha1 DriverDeclaration, see docs/examples/): the driver flags write over it")
	o := &declaration.Overrides{}
	for _, df := range declaration.Flags() {
		fl := f.VarPF(o.Value(df), df.Name, "", declaration.FlagUsage(df))
		if df.Switch {
			fl.NoOptDefVal = "true"
		}
	}
	f.Var(o.SetValue(), declaration.SetFlag, declaration.SetFlagUsage)
	return o
}

// verdictError is what drakit conformance exits with after a run with
// verdict v whose set-up, run or tear-down ended with err: nil when
// Conformant; the verdict's line, the summary's last, with its exit code
// when not; Could not certify when the run could not take place. A Not
// conformant verdict stands over a tear-down's error, which is logged.
func verdictError(ctx context.Context, v conformance.Verdict, err error) error {
	if err != nil && errors.Is(err, conformance.ErrNoScenarios) && v.Outcome != "" {
		err = nil // the verdict says that no scenario ran
	}
	switch {
	case v.Outcome == report.NotConformant:
		if err != nil {
			klog.FromContext(ctx).Error(err, "The run did not end cleanly")
		}
		return &cli.ExitError{Code: v.ExitCode(), Err: errors.New(v.Line()), Bare: true}
	case err != nil:
		return &cli.ExitError{Code: report.ExitCouldNotCertify, Err: err}
	case v.Outcome == report.Conformant:
		return nil
	}
	return &cli.ExitError{Code: v.ExitCode(), Err: errors.New(v.Line()), Bare: true}
}

// withEnvironment returns cfg for the environment set up: the provider's
// kubeconfig and, for each flag not given, node 1's paths where the kit
// reads the node's files (the local cluster's nodes are this host's; a
// kind node's emulator root and CDI dir are host directories mounted in
// it), every node's emulator root, and the API server's address the node
// layout has for pods (kind: the control plane on the kind network).
func withEnvironment(ctx context.Context, cfg conformance.Config, env *environment.Environment, ecfg *envconf.Config,
	provider string, changed func(flag string) bool) (conformance.Config, error) {
	if provider == "existing" {
		return cfg, nil
	}
	cfg.Kubeconfig = ecfg.KubeconfigFile()
	nodes, err := env.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		return cfg, err
	}
	return withNodes(cfg, nodes, changed), nil
}

// hostPaths maps n's directories to the host directories mounted at them
// (nil: none).
func hostPaths(n environment.Node) map[string]string {
	var m map[string]string
	for node, host := range map[string]string{n.EmulatorRoot: n.HostEmulatorRoot, n.CDIDir: n.HostCDIDir, n.KubeletRootDir: n.HostKubeletRootDir} {
		if node != "" && host != "" {
			if m == nil {
				m = map[string]string{}
			}
			m[node] = host
		}
	}
	return m
}

// withNodes sets what withEnvironment learns from the nodes' layouts.
func withNodes(cfg conformance.Config, nodes []environment.Node, changed func(flag string) bool) conformance.Config {
	n := nodes[0]
	set := map[string]func(){}
	hostRoot := func(n environment.Node) string { return n.HostEmulatorRoot }
	switch {
	case n.OnHost:
		hostRoot = func(n environment.Node) string { return n.EmulatorRoot }
		set["node-cdi-dir"] = func() { cfg.NodeCDIDir = n.CDIDir }
		set["node-kubelet-root-dir"] = func() { cfg.NodeKubeletRootDir = n.KubeletRootDir }
		set["node-cgroup-root"] = func() { cfg.NodeCgroupRoot = "/sys/fs/cgroup" }
		set["probe-host-network"] = func() { cfg.ProbeHostNetwork = true } // no CNI on the local cluster
	default:
		if n.HostCDIDir != "" {
			set["node-cdi-dir"] = func() { cfg.NodeCDIDir = n.HostCDIDir }
		}
		if n.HostKubeletRootDir != "" {
			set["node-kubelet-root-dir"] = func() { cfg.NodeKubeletRootDir = n.HostKubeletRootDir }
		}
		if n.HostCgroupRoot != "" {
			set["node-cgroup-root"] = func() { cfg.NodeCgroupRoot = n.HostCgroupRoot }
		}
		cfg.NodeHostPaths = hostPaths(n)
	}
	if root := hostRoot(n); root != "" {
		set["node-emulator-root"] = func() { cfg.NodeEmulatorRoot = root }
		set["node-sysfs"] = func() { cfg.NodeSysfsRoot = filepath.Join(root, "sys") }
	}
	if n.APIServerHost != "" {
		set["apiserver-host"] = func() { cfg.APIServerHost = n.APIServerHost }
		set["apiserver-port"] = func() { cfg.APIServerPort = n.APIServerPort }
	}
	for flag, f := range set {
		if !changed(flag) {
			f()
		}
	}
	if len(nodes) > 1 {
		if !changed("node-name") {
			cfg.NodeName = n.Name
		}
		if !changed("node-emulator-roots") && hostRoot(n) != "" {
			cfg.NodeEmulatorRoots = map[string]string{}
			for _, n := range nodes {
				cfg.NodeEmulatorRoots[n.Name] = hostRoot(n)
			}
		}
	}
	return cfg
}
