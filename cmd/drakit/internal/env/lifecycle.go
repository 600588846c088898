package env

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/environment"
	"drakit.dev/drakit/environment/kind"
	"drakit.dev/drakit/reference/deploy"
)

// referenceDrivers are the reference drivers --deploy names, in the order
// they are deployed.
var referenceDrivers = []string{"gpu", "nic", "cpu", "tpu"}

// LifecycleFlags are the environment's flags, which drakit env and drakit
// conformance share: bound once, whatever the provider; what a provider
// does not take is refused naming the flag.
type LifecycleFlags struct {
	provider       string
	local          cluster.Config
	profile        string
	clusterProfile string
	imexChannels   int
	shim           string
	deploy         []string
	recreate       bool
	keep           bool
	reuse          bool
	clusterConfig  string
	kind           kind.ConfigOptions
	// localOnly are the local cluster's flags bound (bindClusterFlags,
	// BindLocalFlags) that only --provider local takes.
	localOnly []string
}

// noProfile is the --emulator-profile that renders nothing (no emulated
// hardware, no watcher).
const noProfile = "none"

// DefaultKindNodeImage is the offline node image scripts/kind-node-image.sh
// builds.
const DefaultKindNodeImage = "drakit.dev/kind-node:v1.37.2"

// kindFlags are the flags only --provider kind takes.
var kindFlags = []string{"kind-node-image", "kind-workers", "kind-state-dir", "kind-offline"}

// NewLifecycleFlags returns the lifecycle's flags with provider as the
// default --provider, rendering dgx-a100-mig and deploying the GPU driver.
func NewLifecycleFlags(provider string) *LifecycleFlags {
	return &LifecycleFlags{
		provider: provider, local: cluster.DefaultConfig(), profile: "dgx-a100-mig",
		shim: "_output/lib/libnvidia-ml.so", deploy: []string{"gpu"},
		kind: kind.ConfigOptions{NodeImage: DefaultKindNodeImage, StateDir: filepath.Join(os.TempDir(), "drakit-kind"), Offline: true},
	}
}

// Provider is the --provider.
func (l *LifecycleFlags) Provider() string { return l.provider }

// Bind binds the lifecycle's own flags; the local cluster's are bound by
// the caller (all of them, or those that do not clash with its own).
func (l *LifecycleFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&l.provider, "provider", l.provider, "cluster provider: "+strings.Join(environment.ProviderNames(), ", ")+
		" (existing: the --kubeconfig cluster, used as it is; local: drakit's process cluster, created, rendered, deployed and torn down; kind: a kind cluster in Docker from kind/cluster.yaml or --cluster-config, the same)")
	fs.StringVar(&l.profile, "emulator-profile", l.profile, "node profile rendered on every node (local, kind; "+cli.ProfileFlagUsage+"; "+noProfile+": no emulated hardware and no watcher)")
	fs.StringVar(&l.clusterProfile, "cluster-profile", l.clusterProfile, "cluster profile whose node of each node's name is rendered on it, instead of --emulator-profile (local, kind; "+cli.ClusterProfileFlagUsage+")")
	fs.IntVar(&l.imexChannels, "imex-channels", l.imexChannels, "with --deploy gpu: IMEX channels per NVLink clique, published by the GPU driver's IMEX controller (0: no controller)")
	fs.StringVar(&l.shim, "shim", l.shim, "the built NVML shim rendered onto the nodes (local, kind)")
	fs.StringSliceVar(&l.deploy, "deploy", l.deploy, "reference drivers deployed once the hardware is rendered: "+strings.Join(referenceDrivers, ",")+" or none (local, kind; on nodes with paths of their own, one deployment pinned to each node)")
	fs.BoolVar(&l.recreate, "recreate", l.recreate, "tear down a cluster the provider finds before creating it (one an interrupted run left behind)")
	fs.BoolVar(&l.keep, "keep-cluster", l.keep, "leave the cluster running at the end (its watchers stopped, its logs exported)")
	fs.StringVar(&l.clusterConfig, "cluster-config", l.clusterConfig, "the provider's cluster configuration file (kind: its kind.x-k8s.io config); empty: the provider's default")
	fs.StringVar(&l.kind.NodeImage, "kind-node-image", l.kind.NodeImage, "kind: every node's image (scripts/kind-node-image.sh builds the default offline)")
	fs.IntVar(&l.kind.Workers, "kind-workers", l.kind.Workers, "kind: worker nodes besides the control plane (0: one node, which runs the drivers and the kit's pods)")
	fs.StringVar(&l.kind.StateDir, "kind-state-dir", l.kind.StateDir, "kind: host directory of the kubeconfig and, per node, the directories mounted at its emulator root, CDI dir and kubelet root dir, which the kit reads")
	fs.BoolVar(&l.kind.Offline, "kind-offline", l.kind.Offline, "kind: no default CNI and no kube-proxy (the offline node image has neither image; its static CNI configuration serves)")
}

// BindReuse binds --reuse-environment, which only drakit conformance
// takes.
func (l *LifecycleFlags) BindReuse(fs *pflag.FlagSet) {
	fs.BoolVar(&l.reuse, "reuse-environment", l.reuse, "local, kind: run against the provider's running cluster as 'drakit env up' left it (no render, image load or deploy; its watchers and the cluster stay; only the logs are exported); an error when none runs")
}

// setupFlags are the flags of what setup and finish do besides finding the
// cluster and exporting its logs: --reuse-environment refuses them.
var setupFlags = []string{"emulator-profile", "cluster-profile", "imex-channels", "deploy", "recreate", "cluster-config", "keep-cluster"}

// existingRefused are the flags --provider existing refuses: it has no
// access to the nodes and never creates a cluster.
var existingRefused = []string{"emulator-profile", "cluster-profile", "imex-channels", "deploy", "recreate", "cluster-config", "reuse-environment"}

// BindLocalFlags binds the local cluster's flags that drakit conformance
// has no flag of its own for.
func (l *LifecycleFlags) BindLocalFlags(fs *pflag.FlagSet) {
	fs.StringVar(&l.local.RunDir, "run-dir", l.local.RunDir, "the local cluster's run dir")
	fs.StringVar(&l.local.ComponentsDir, "components-dir", l.local.ComponentsDir, "the local cluster's built components (scripts/build-components.sh)")
	fs.StringVar(&l.local.ImagesDir, "images-dir", l.local.ImagesDir, "docker-archive images loaded into the cluster (the local cluster imports them on up)")
	fs.IntVar(&l.local.Nodes, "nodes", l.local.Nodes, fmt.Sprintf("the local cluster's nodes (1..%d)", cluster.MaxNodes))
	l.localOnly = append(l.localOnly, "run-dir", "components-dir", "nodes")
}

// bindClusterFlags binds every flag of the local cluster (cli.BindClusterFlags):
// drakit env's.
func (l *LifecycleFlags) bindClusterFlags(fs *pflag.FlagSet) {
	cli.BindClusterFlags(fs, &l.local)
	l.localOnly = append(l.localOnly, clusterFlagNames()...)
}

// sharedClusterFlags are the local cluster's flags that other providers
// take too: kind loads the images dir's archives.
var sharedClusterFlags = []string{"images-dir"}

// clusterFlagNames are the names of the local cluster's flags that only
// --provider local takes.
func clusterFlagNames() []string {
	cfg := cluster.DefaultConfig()
	fs := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	cli.BindClusterFlags(fs, &cfg)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(sharedClusterFlags, f.Name) {
			names = append(names, f.Name)
		}
	})
	return names
}

// drivers returns the --deploy drivers as the reference deployment of
// make conformance has them: the GPU driver with the alpha partition and
// list attributes and, on the local cluster, the RuntimeClass that lets
// dynamic MIG run unprivileged; two VFs per PF.
func (l *LifecycleFlags) drivers() ([]environment.Driver, error) {
	if len(l.deploy) == 1 && l.deploy[0] == "none" {
		return nil, nil
	}
	local := l.provider == "local"
	var drivers []environment.Driver
	for _, name := range referenceDrivers {
		if !slices.Contains(l.deploy, name) {
			continue
		}
		o := deploy.DefaultOptions(deploy.Kind(name))
		switch o.Kind {
		case deploy.KindGPU:
			o.PartitionableAlpha, o.ListAttributes, o.IMEXChannels = true, true, l.imexChannels
			if local {
				o.RuntimeClassName = "drakit-mig-manager"
			} else {
				// kind: no drakit-mig-manager RuntimeClass (a kind node
				// is privileged, the driver pod is too).
				o.Privileged = true
			}
		case deploy.KindNIC:
			// 16 VFs on dgx-a100-mig: within the 32 devices one claim can
			// hold, so that a claim can still ask for more than the node has.
			o.VFsPerPF = 2
		}
		if !local {
			// The API server is the node layout's (the control plane on
			// the kind network).
			o.APIServerHost, o.APIServerPort = "", 0
		}
		drivers = append(drivers, environment.ReferenceDriver(o))
	}
	for _, name := range l.deploy {
		if !slices.Contains(referenceDrivers, name) {
			return nil, fmt.Errorf("--deploy %q: unknown driver (want %s, or none)", name, strings.Join(referenceDrivers, ", "))
		}
	}
	return drivers, nil
}

// Environment builds the lifecycle the flags describe; kube are the
// existing provider's client flags, artifacts where the logs go (empty:
// not exported).
func (l *LifecycleFlags) Environment(fs *pflag.FlagSet, kube *cli.KubeFlags, artifacts string) (*environment.Environment, error) {
	// Without --nodes a running cluster keeps its nodes, as with cluster
	// up; --recreate makes a cluster of --nodes.
	if f := fs.Lookup("nodes"); f != nil && !f.Changed && !l.recreate {
		if n, ok, err := cluster.RecordedNodes(l.local); err == nil && ok {
			l.local.Nodes = n
		}
	}
	drakit, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the drakit binary: %w", err)
	}
	shim := l.shim
	if shim != "" {
		if shim, err = filepath.Abs(shim); err != nil {
			return nil, fmt.Errorf("--shim: %w", err)
		}
	}
	if l.provider != "kind" {
		for _, f := range kindFlags {
			if fs.Lookup(f) != nil && fs.Changed(f) {
				return nil, fmt.Errorf("--%s: only with --provider kind", f)
			}
		}
	}
	if l.provider != "local" {
		for _, f := range l.localOnly {
			if fs.Lookup(f) != nil && fs.Changed(f) {
				return nil, fmt.Errorf("--%s: only with --provider local (the local cluster's flag)", f)
			}
		}
	}
	kindOpts := l.kind
	if kindOpts.Workers < 0 {
		return nil, fmt.Errorf("--kind-workers %d: must not be negative", kindOpts.Workers)
	}
	if kindOpts.StateDir != "" {
		if kindOpts.StateDir, err = filepath.Abs(kindOpts.StateDir); err != nil {
			return nil, fmt.Errorf("--kind-state-dir: %w", err)
		}
	}
	if err := cli.ClientFlagsOnlyWithExisting(fs, l.provider); err != nil {
		return nil, err
	}
	provider, err := environment.NewProvider(l.provider, environment.ProviderConfig{
		Kubeconfig: kube.Kubeconfig(), KubeContext: kube.Context(), RequestTimeout: kube.RequestTimeout(),
		Local: l.local, Kind: kindOpts, Drakit: drakit, Shim: shim,
	})
	if err != nil {
		return nil, fmt.Errorf("--provider: %w", err)
	}
	drivers, err := l.drivers()
	if err != nil {
		return nil, err
	}
	profile := l.profile
	if profile == noProfile {
		profile = ""
	}
	if l.clusterProfile != "" {
		if f := fs.Lookup("emulator-profile"); f != nil && f.Changed {
			return nil, fmt.Errorf("--cluster-profile %s: not with --emulator-profile %s (render one of them)", l.clusterProfile, l.profile)
		}
		profile = ""
	}
	if l.imexChannels != 0 && !slices.Contains(l.deploy, "gpu") {
		return nil, fmt.Errorf("--imex-channels %d: only with --deploy gpu (the GPU driver's IMEX controller publishes them)", l.imexChannels)
	}
	clusterProfile := l.clusterProfile
	var archives []string
	switch {
	case l.provider == "existing":
		// The existing cluster is used as it is.
		for _, f := range existingRefused {
			if fs.Lookup(f) != nil && fs.Changed(f) {
				return nil, fmt.Errorf("--%s: not with --provider existing (the cluster is used as it is; drakit has no access to its nodes)", f)
			}
		}
		profile, clusterProfile, drivers = "", "", nil
	case l.reuse:
		for _, f := range setupFlags {
			if fs.Lookup(f) != nil && fs.Changed(f) {
				return nil, fmt.Errorf("--%s: not with --reuse-environment (the running cluster is used as it was set up)", f)
			}
		}
		profile, clusterProfile, drivers = "", "", nil
	default:
		if archives, err = filepath.Glob(filepath.Join(l.local.ImagesDir, "*.tar")); err != nil {
			return nil, fmt.Errorf("--images-dir: %w", err)
		}
	}
	return environment.New(environment.Config{
		Provider: provider, ClusterName: "drakit", ClusterConfig: l.clusterConfig, Recreate: l.recreate,
		EmulatorProfile: profile, ClusterProfile: clusterProfile, ImageArchives: archives, Drivers: drivers, ArtifactsDir: artifacts, Keep: l.keep, Reuse: l.reuse,
	})
}
