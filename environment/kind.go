package environment

import (
	"context"
	"os"

	"sigs.k8s.io/e2e-framework/pkg/types"

	"drakit.dev/drakit/environment/kind"
)

// Kind is the kind provider (package environment/kind) with what the
// lifecycle needs of it: it renders the emulated hardware itself (drakit
// and the NVML shim installed in the node), runs "drakit" in a node as the
// drakit it installed there, and tells the nodes' paths, the host
// directories mounted at them and the API server's address on the kind
// network.
type Kind struct {
	*kind.Provider
	opts kind.ConfigOptions
	// drakit and shim are the host files RenderEmulator installs in the
	// nodes.
	drakit, shim string
}

var (
	_ types.E2EClusterProviderWithImageLoader = (*Kind)(nil)
	_ NodeAccess                              = (*Kind)(nil)
	_ NodeLayout                              = (*Kind)(nil)
	_ EmulatorRenderer                        = (*Kind)(nil)
)

// NewKind returns the kind provider configured with opts (its node image,
// workers, state dir, offline settings); drakit and shim are the host's
// drakit binary and built NVML shim (empty: none) the nodes get.
func NewKind(opts kind.ConfigOptions, drakit, shim string) *Kind {
	k := &Kind{Provider: kind.NewProvider(), opts: opts, drakit: drakit, shim: shim}
	k.Provider.WithOpts(kind.WithConfig(opts))
	return k
}

// The e2e-framework setters return the adapter, not the kind provider it
// wraps, so that New keeps the lifecycle's methods.

// SetDefaults sets the kind provider's defaults.
func (k *Kind) SetDefaults() types.E2EClusterProvider {
	k.Provider.SetDefaults()
	return k
}

// WithName sets the cluster's name (the node containers' prefix).
func (k *Kind) WithName(name string) types.E2EClusterProvider {
	k.Provider.WithName(name)
	return k
}

// WithVersion is not used: the node image decides the version.
func (k *Kind) WithVersion(v string) types.E2EClusterProvider {
	k.Provider.WithVersion(v)
	return k
}

// WithPath sets the drakit binary installed in the nodes.
func (k *Kind) WithPath(path string) types.E2EClusterProvider {
	k.drakit = path
	return k
}

// WithOpts applies e2e-framework cluster options to the kind provider.
func (k *Kind) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	k.Provider.WithOpts(opts...)
	return k
}

// RunOnNode runs argv in the node container (KindArgv).
func (k *Kind) RunOnNode(ctx context.Context, node string, argv []string) error {
	return k.Provider.RunOnNode(ctx, node, KindArgv(argv))
}

// KindArgv returns argv with argv[0] "drakit" replaced by the drakit
// RenderEmulator installs in every node (kind.NodeDrakit).
func KindArgv(argv []string) []string {
	if len(argv) == 0 || argv[0] != "drakit" {
		return argv
	}
	return append([]string{kind.NodeDrakit}, argv[1:]...)
}

// RenderEmulator installs drakit and the NVML shim in node and renders hw
// there (kind.Provider.RenderNode): each profile a built-in name, or a
// file of this host.
func (k *Kind) RenderEmulator(ctx context.Context, node string, hw Hardware) error {
	o := kind.RenderOptions{Drakit: k.drakit, Shim: k.shim}
	isFile := func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode().IsRegular() }
	switch {
	case hw.ClusterProfile != "" && isFile(hw.ClusterProfile):
		o.ClusterProfileFile = hw.ClusterProfile
	case hw.ClusterProfile != "":
		o.ClusterProfile = hw.ClusterProfile
	case isFile(hw.Profile):
		o.ProfileFile = hw.Profile
	default:
		o.Profile = hw.Profile
	}
	return k.RenderNode(ctx, node, o)
}

// Node returns node's paths: the kind node's defaults (the reference
// driver's), the host directories the provider mounts at its emulator root,
// CDI dir and kubelet root dir (with a state dir), and the API server's address on the
// kind network.
func (k *Kind) Node(_ context.Context, name string) (Node, error) {
	host, port, err := k.APIServerEndpoint()
	if err != nil {
		return Node{}, err
	}
	return KindNode(name, k.opts.StateDir, host, port), nil
}

// KindNode is a kind node's layout: the paths inside it, where this host
// sees its emulator root, CDI dir and kubelet root dir (stateDir empty:
// nowhere) and its cgroups, and the API server at host:port.
func KindNode(name, stateDir, host string, port int) Node {
	n := DefaultNode(name)
	n.EmulatorRoot, n.CDIDir, n.KubeletRootDir = kind.EmulatorRoot, kind.NodeCDIDir, kind.NodeKubeletRootDir
	if stateDir != "" {
		dirs := kind.StateDirs(stateDir, name)
		n.HostEmulatorRoot, n.HostCDIDir, n.HostKubeletRootDir = dirs.Emulator, dirs.CDI, dirs.Kubelet
	}
	// The node containers run on this host's Docker: their cgroups, and the
	// pods' below them, are in this host's cgroup file system.
	n.HostCgroupRoot = "/sys/fs/cgroup"
	n.APIServerHost, n.APIServerPort = host, port
	return n
}
