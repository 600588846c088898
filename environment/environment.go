package environment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/klog/v2"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"
)

// NodeAccess runs commands on a cluster's nodes. The local provider runs
// them on the host, the kind provider in the node containers.
type NodeAccess interface {
	// NodeNames returns the names of the cluster's nodes (their Node
	// objects' names), in a stable order.
	NodeNames(ctx context.Context) ([]string, error)
	// RunOnNode runs argv on the node as root and returns its error with
	// what it printed; argv[0] "drakit" is the provider's drakit binary for
	// that node.
	RunOnNode(ctx context.Context, node string, argv []string) error
}

// Node is where a node keeps what the emulator and the drivers use: paths
// in the node's own file system.
type Node struct {
	Name string
	// KubeletRootDir, CDIDir and EmulatorRoot are the kubelet's root dir,
	// the container runtime's CDI spec dir and the emulated hardware's
	// root, as the drivers mount them.
	KubeletRootDir, CDIDir, EmulatorRoot string
	// ShimLibrary is the built NVML shim that render installs (empty:
	// none, and the GPU driver finds no NVML).
	ShimLibrary string
	// StateDir is where drivers keep checkpoints (the CPU driver's
	// <StateDir>/cpu-driver; empty: the driver's default).
	StateDir string
	// LogDir holds the node's logs, the watcher's among them.
	LogDir string
	// OnHost is true when the paths are this host's too: the kit reads
	// the node's files directly (the local cluster).
	OnHost bool
	// HostEmulatorRoot, HostCDIDir and HostKubeletRootDir, when set, are
	// where this host sees the node's EmulatorRoot, CDIDir and
	// KubeletRootDir (the kind provider mounts a host directory at each);
	// the kit reads the node's files there.
	HostEmulatorRoot, HostCDIDir, HostKubeletRootDir string
	// HostCgroupRoot, when set, is a cgroup file system of this host in
	// which the node's cgroups are (the kind provider: the host's, where
	// each node container's cgroups nest); the kit finds a pod's cgroup
	// there by its UID.
	HostCgroupRoot string
	// APIServerHost and APIServerPort, when set, are how the node's
	// hostNetwork driver pods and the kit's probe pods reach the API
	// server (empty: the driver options' and the kit's defaults).
	APIServerHost string
	APIServerPort int
	// HTTPPortOffset is added to every driver's loopback HTTP port on the
	// node: nodes that share one loopback (the local cluster's) need ports
	// of their own.
	HTTPPortOffset int
}

// NodeLayout says where each node keeps its paths; a provider without it
// has DefaultNode's.
type NodeLayout interface {
	Node(ctx context.Context, name string) (Node, error)
}

// DefaultNode is a node with the kubelet's default paths and the emulator
// root the reference driver's manifests and kind/cluster.yaml use.
func DefaultNode(name string) Node {
	return Node{
		Name:           name,
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         "/var/run/cdi",
		EmulatorRoot:   "/var/lib/drakit/emulator",
		LogDir:         "/var/log/drakit",
	}
}

// watcherPIDFile is where a node's sriov_numvfs watcher records its PID:
// beside the emulator root, which render replaces.
func (n Node) watcherPIDFile() string { return n.EmulatorRoot + ".watch.pid" }

// watcherLog is the watcher's log on the node.
func (n Node) watcherLog() string { return filepath.Join(n.LogDir, "emulator-watch.log") }

// Config says which environment to set up.
type Config struct {
	// Provider is the cluster provider (NewProvider).
	Provider types.E2EClusterProvider
	// ClusterName is the name the provider gets (WithName) and the context
	// key it is stored under.
	ClusterName string
	// ClusterConfig, when set, is the provider's configuration file
	// (CreateWithConfig); empty: Create.
	ClusterConfig string
	// Recreate destroys whatever the provider has of the cluster, up or
	// not, before creating it (a cluster an interrupted run left behind).
	Recreate bool
	// EmulatorProfile is the node profile rendered on every node (a
	// built-in name or a file readable on the node); empty: no emulated
	// hardware and no watcher, unless ClusterProfile.
	EmulatorProfile string
	// ClusterProfile is the cluster profile (a built-in name or a file)
	// whose node of each node's name is rendered on it: nodes, NVLink
	// cliques and TPU slices of one coherent cluster. Exclusive with
	// EmulatorProfile; every node must be one of the profile's.
	ClusterProfile string
	// ImageArchives are docker-archives loaded into every node.
	ImageArchives []string
	// Drivers are deployed in order once the hardware is rendered.
	Drivers []Driver
	// ArtifactsDir receives the cluster's logs in <ArtifactsDir>/logs
	// (empty: no export).
	ArtifactsDir string
	// Keep leaves the cluster running at the end.
	Keep bool
	// Reuse uses the provider's running cluster as an earlier setup left
	// it (drakit env up): setup only finds it, and fails when none
	// runs; finish only exports the logs. Not with Recreate.
	Reuse bool
}

// Hardware is what is rendered on a node: a node profile, or the node of
// a cluster profile that has the node's name.
type Hardware struct {
	Profile, ClusterProfile string
}

// rendered reports whether there is hardware to render.
func (h Hardware) rendered() bool { return h.Profile != "" || h.ClusterProfile != "" }

// String names the profile in logs and errors.
func (h Hardware) String() string {
	if h.ClusterProfile != "" {
		return "cluster profile " + h.ClusterProfile
	}
	return "emulator profile " + h.Profile
}

func (cfg Config) hardware() Hardware {
	return Hardware{Profile: cfg.EmulatorProfile, ClusterProfile: cfg.ClusterProfile}
}

// Environment is one cluster's lifecycle; its steps share the provider and
// what setup learnt.
type Environment struct {
	cfg Config
	// created is true once Create brought up a cluster that was not
	// running before.
	created bool
	// destroyAlways makes the teardown destroy a cluster setup reused
	// (Down).
	destroyAlways bool
}

// New returns the lifecycle of cfg's environment.
func New(cfg Config) (*Environment, error) {
	if cfg.Provider == nil {
		return nil, errors.New("set up environment: no cluster provider")
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "drakit"
	}
	if cfg.Reuse {
		if _, ok := cfg.Provider.(Runner); !ok {
			return nil, fmt.Errorf("set up environment: the cluster provider %T cannot tell whether its cluster runs: it cannot be reused", cfg.Provider)
		}
		if cfg.Recreate {
			return nil, errors.New("set up environment: reuse and recreate: a reused cluster is not recreated")
		}
	}
	if cfg.EmulatorProfile != "" && cfg.ClusterProfile != "" {
		return nil, fmt.Errorf("set up environment: emulator profile %s and cluster profile %s: render one of them", cfg.EmulatorProfile, cfg.ClusterProfile)
	}
	if _, ok := cfg.Provider.(NodeAccess); !ok && (cfg.hardware().rendered() || len(cfg.Drivers) > 0) {
		return nil, fmt.Errorf("set up environment: the cluster provider %T has no node access: it cannot render emulated hardware or deploy drivers", cfg.Provider)
	}
	// As envfuncs.CreateCluster prepares a provider.
	cfg.Provider = cfg.Provider.SetDefaults().WithName(cfg.ClusterName)
	return &Environment{cfg: cfg}, nil
}

// Hardware is what setup renders on the nodes.
func (e *Environment) Hardware() Hardware { return e.cfg.hardware() }

// Setup returns the setup steps in order: create or reuse the cluster,
// render the emulated hardware, start the watchers, load the images,
// deploy the drivers; with Reuse only the first, which finds the running
// cluster.
func (e *Environment) Setup() []env.Func {
	if e.cfg.Reuse {
		return []env.Func{e.CreateCluster()}
	}
	return []env.Func{e.CreateCluster(), e.RenderEmulator(), e.StartWatchers(), e.LoadImages(), e.DeployDrivers()}
}

// Finish returns the finish steps in order: stop the watchers, export the
// logs, tear the cluster down; with Reuse only the export.
func (e *Environment) Finish() []env.Func {
	if e.cfg.Reuse {
		return []env.Func{e.ExportLogs()}
	}
	return []env.Func{e.StopWatchers(), e.ExportLogs(), e.DestroyCluster()}
}

// Up runs the setup steps in order and stops at the first that fails; it
// returns the context the steps built (the provider in it).
func (e *Environment) Up(ctx context.Context, ecfg *envconf.Config) (context.Context, error) {
	return runSteps(ctx, ecfg, e.Setup(), true)
}

// Down runs every finish step, whatever failed before, and joins their
// errors; unless Keep, it destroys the provider's cluster even when this
// Environment did not create it.
func (e *Environment) Down(ctx context.Context, ecfg *envconf.Config) error {
	e.destroyAlways = true
	_, err := runSteps(ctx, ecfg, e.Finish(), false)
	return err
}

// Run sets up, runs body when every setup step succeeded, and runs every
// finish step in any case (with a context that is not canceled with ctx),
// as env.Environment.Run does around m.Run: the errors of setup (its
// first), body and every finish step are joined.
func (e *Environment) Run(ctx context.Context, ecfg *envconf.Config, body env.Func) error {
	ctx, setupErr := e.Up(ctx, ecfg)
	var bodyErr error
	if setupErr == nil {
		ctx, bodyErr = body(ctx, ecfg)
	}
	// An interrupted run (its context canceled) still cleans up.
	_, finishErr := runSteps(context.WithoutCancel(ctx), ecfg, e.Finish(), false)
	return errors.Join(setupErr, bodyErr, finishErr)
}

// runSteps runs steps in order, passing each the context the one before
// returned; stopAtError returns at the first error, else every step runs
// and the errors are joined.
func runSteps(ctx context.Context, ecfg *envconf.Config, steps []env.Func, stopAtError bool) (context.Context, error) {
	var errs []error
	for _, step := range steps {
		next, err := step(ctx, ecfg)
		if next != nil {
			ctx = next
		}
		if err != nil {
			if stopAtError {
				return ctx, err
			}
			klog.FromContext(ctx).Error(err, "Environment step failed; the next ones run")
			errs = append(errs, err)
		}
	}
	return ctx, errors.Join(errs...)
}
