package kind

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	kindconfig "drakit.dev/drakit/kind"
)

// Defaults of a Provider.
const (
	DefaultClusterName = "drakit"
	// DefaultWaitForReady is how long Create waits for the control plane
	// to become ready (kind's --wait).
	DefaultWaitForReady = 5 * time.Minute
)

// Provider creates and drives one kind cluster through kind's Go library
// with the docker node provider.
type Provider struct {
	kind       *cluster.Provider
	name       string
	base       *v1alpha4.Cluster
	config     ConfigOptions
	kubeconfig string
	wait       time.Duration
	restConfig *rest.Config
}

var (
	_ types.E2EClusterProvider                = (*Provider)(nil)
	_ types.E2EClusterProviderWithImageLoader = (*Provider)(nil)
)

// NewProvider returns a Provider with its defaults set (SetDefaults).
func NewProvider() *Provider {
	p := &Provider{}
	p.SetDefaults()
	return p
}

// SetDefaults sets what is unset: the cluster name DefaultClusterName, the
// docker node provider, the wait DefaultWaitForReady, and the worker count
// of kind/cluster.yaml (-1: as the base has them).
func (p *Provider) SetDefaults() types.E2EClusterProvider {
	if p.name == "" {
		p.name = DefaultClusterName
	}
	if p.kind == nil {
		p.kind = cluster.NewProvider(cluster.ProviderWithDocker())
	}
	if p.wait == 0 {
		p.wait = DefaultWaitForReady
	}
	if p.config == (ConfigOptions{}) {
		p.config.Workers = -1
	}
	return p
}

// WithName sets the cluster's name.
func (p *Provider) WithName(name string) types.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion is part of e2e-framework's interface; the node image
// (ConfigOptions.NodeImage) decides the Kubernetes version and kind
// downloads nothing, so the version is not used.
func (p *Provider) WithVersion(string) types.E2EClusterProvider { return p }

// WithPath is part of e2e-framework's interface for providers that run a
// binary; this one runs kind's library and docker from PATH, so the path
// is not used.
func (p *Provider) WithPath(string) types.E2EClusterProvider { return p }

// WithOpts applies e2e-framework cluster options such as WithConfig.
func (p *Provider) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// WithConfig returns the option that sets the kit's additions to the base
// configuration (the cluster name is WithName's).
func WithConfig(opts ConfigOptions) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.config = opts
		}
	}
}

// WithBaseConfig returns the option that replaces the base configuration
// (default: the repository's kind/cluster.yaml).
func WithBaseConfig(base *v1alpha4.Cluster) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.base = base
		}
	}
}

// WithKindProvider returns the option that replaces kind's provider, for
// another node provider or a logger (cluster.ProviderWithLogger).
func WithKindProvider(k *cluster.Provider) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.kind = k
		}
	}
}

// Create creates the cluster from the base configuration (kind/cluster.yaml
// unless WithBaseConfig replaced it) with WithConfig's additions; args are
// not used.
func (p *Provider) Create(ctx context.Context, _ ...string) (string, error) {
	base := p.base
	if base == nil {
		var err error
		if base, err = ParseConfig(kindconfig.ClusterYAML); err != nil {
			return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
		}
	}
	return p.create(ctx, base)
}

// CreateWithConfig creates the cluster from the kind configuration in
// configFile with WithConfig's additions.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	raw, err := os.ReadFile(configFile)
	if err != nil {
		return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
	}
	base, err := ParseConfig(raw)
	if err != nil {
		return "", fmt.Errorf("create kind cluster %s from %s: %w", p.name, configFile, err)
	}
	return p.create(ctx, base)
}

func (p *Provider) create(ctx context.Context, base *v1alpha4.Cluster) (string, error) {
	logger := klog.FromContext(ctx).WithValues("cluster", p.name)
	if exists, err := p.Exists(); err != nil {
		return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
	} else if exists {
		return p.reuse(ctx)
	}
	opts := p.config
	opts.ClusterName = p.name
	cfg, err := Generate(base, opts)
	if err != nil {
		return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
	}
	if opts.StateDir != "" {
		for _, n := range NodeNames(p.name, cfg) {
			dirs := StateDirs(opts.StateDir, n)
			// A kubelet root dir left by an earlier cluster of that name
			// holds its checkpoints and sockets: the new node starts
			// without them, as in its own container.
			if err := os.RemoveAll(dirs.Kubelet); err != nil {
				return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
			}
			for _, d := range []string{dirs.Emulator, dirs.CDI, dirs.Kubelet} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
				}
			}
		}
	}
	if opts.StateDir != "" {
		if err := os.WriteFile(SchedulerConfigPath(opts.StateDir), SchedulerConfigYAML, 0o644); err != nil {
			return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
		}
	}
	kubeconfig, err := p.kubeconfigPath()
	if err != nil {
		return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
	}
	createOpts := []cluster.CreateOption{
		cluster.CreateWithV1Alpha4Config(cfg),
		cluster.CreateWithWaitForReady(p.wait),
		cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	}
	if opts.NodeImage != "" {
		createOpts = append(createOpts, cluster.CreateWithNodeImage(opts.NodeImage))
	}
	logger.Info("Creating kind cluster", "nodes", len(cfg.Nodes), "image", opts.NodeImage, "kubeconfig", kubeconfig)
	if err := p.kind.Create(p.name, createOpts...); err != nil {
		return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
	}
	if len(cfg.Nodes) > 1 {
		// kind keeps the control plane tainted when there are workers;
		// every node of a drakit cluster is a test node.
		cp := p.name + "-control-plane"
		if err := p.runOnNode(ctx, cp, UntaintCommand(cp)); err != nil {
			return "", fmt.Errorf("create kind cluster %s: %w", p.name, err)
		}
	}
	p.kubeconfig = kubeconfig
	return kubeconfig, nil
}

// reuse returns the kubeconfig of the cluster kind already runs under the
// provider's name, written where Create writes it; its nodes and their
// state directories stay as they are.
func (p *Provider) reuse(ctx context.Context) (string, error) {
	kubeconfig, err := p.kubeconfigPath()
	if err != nil {
		return "", fmt.Errorf("reuse kind cluster %s: %w", p.name, err)
	}
	raw, err := p.kind.KubeConfig(p.name, false)
	if err != nil {
		return "", fmt.Errorf("reuse kind cluster %s: %w", p.name, err)
	}
	if err := os.WriteFile(kubeconfig, []byte(raw), 0o600); err != nil {
		return "", fmt.Errorf("reuse kind cluster %s: %w", p.name, err)
	}
	klog.FromContext(ctx).Info("Reusing the running kind cluster", "cluster", p.name, "kubeconfig", kubeconfig)
	p.kubeconfig = kubeconfig
	return kubeconfig, nil
}

// Running reports whether kind runs a cluster of the provider's name:
// Create then reuses it.
func (p *Provider) Running(context.Context) (bool, error) { return p.Exists() }

// kubeconfigPath is where kind writes the cluster's kubeconfig: in the
// state directory when there is one, else a new temporary file.
func (p *Provider) kubeconfigPath() (string, error) {
	if p.config.StateDir != "" {
		return filepath.Join(p.config.StateDir, "kubeconfig"), os.MkdirAll(p.config.StateDir, 0o755)
	}
	f, err := os.CreateTemp("", "drakit-kind-"+p.name+"-kubeconfig-*")
	if err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// GetKubeconfig returns the path of the kubeconfig Create wrote.
func (p *Provider) GetKubeconfig() string { return p.kubeconfig }

// GenerateKubeconfig asks kind for the cluster's kubeconfig (the host's
// endpoint; with the single argument "internal", the nodes' network
// endpoint), writes it to a new temporary file and returns its path.
func (p *Provider) GenerateKubeconfig(args ...string) (string, error) {
	internal := slices.Equal(args, []string{"internal"})
	cfg, err := p.kind.KubeConfig(p.name, internal)
	if err != nil {
		return "", fmt.Errorf("get kubeconfig of kind cluster %s: %w", p.name, err)
	}
	f, err := os.CreateTemp("", "drakit-kind-"+p.name+"-kubeconfig-*")
	if err != nil {
		return "", fmt.Errorf("write kubeconfig of kind cluster %s: %w", p.name, err)
	}
	if _, err := io.WriteString(f, cfg); err != nil {
		f.Close()
		return "", fmt.Errorf("write kubeconfig of kind cluster %s: %w", p.name, err)
	}
	return f.Name(), f.Close()
}

// GetKubectlContext is the context kind names in the kubeconfig.
func (p *Provider) GetKubectlContext() string { return "kind-" + p.name }

// ExportLogs collects every node's logs (journal, containers, kubelet,
// containerd) under dest, as `kind export logs` does.
func (p *Provider) ExportLogs(_ context.Context, dest string) error {
	if err := p.kind.CollectLogs(p.name, dest); err != nil {
		return fmt.Errorf("export logs of kind cluster %s: %w", p.name, err)
	}
	return nil
}

// Destroy deletes the cluster's node containers and its kubeconfig entry.
func (p *Provider) Destroy(_ context.Context) error {
	if err := p.kind.Delete(p.name, p.kubeconfig); err != nil {
		return fmt.Errorf("delete kind cluster %s: %w", p.name, err)
	}
	return nil
}

// WaitForControlPlane waits until every node of the cluster is Ready.
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	cs, err := kubernetes.NewForConfig(client.RESTConfig())
	if err != nil {
		return fmt.Errorf("wait for kind cluster %s: %w", p.name, err)
	}
	var notReady []string
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, p.wait, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the API server may not answer yet
		}
		notReady = notReadyNodes(list.Items)
		return len(list.Items) > 0 && len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for kind cluster %s: nodes not ready %v: %w", p.name, notReady, err)
	}
	return nil
}

// notReadyNodes names the nodes whose Ready condition is not True.
func notReadyNodes(list []corev1.Node) []string {
	var out []string
	for _, n := range list {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			out = append(out, n.Name)
		}
	}
	return out
}

// KubernetesRestConfig returns the REST config of Create's kubeconfig; nil
// before Create or when it does not load.
func (p *Provider) KubernetesRestConfig() *rest.Config {
	if p.restConfig == nil && p.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
		if err != nil {
			return nil
		}
		p.restConfig = cfg
	}
	return p.restConfig
}

// LoadImage loads a docker image of the host's daemon into the nodes
// (args: node names, default all), as `kind load docker-image` does: docker
// save to an archive, then LoadImageArchive.
func (p *Provider) LoadImage(ctx context.Context, image string, args ...string) error {
	dir, err := os.MkdirTemp("", "drakit-kind-image-")
	if err != nil {
		return fmt.Errorf("load image %s: %w", image, err)
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "image.tar")
	var out bytes.Buffer
	if err := kindexec.CommandContext(ctx, "docker", "save", "-o", archive, image).SetStderr(&out).Run(); err != nil {
		return fmt.Errorf("load image %s: docker save: %w: %s", image, err, bytes.TrimSpace(out.Bytes()))
	}
	return p.LoadImageArchive(ctx, archive, args...)
}

// LoadImageArchive imports an image archive (docker save's format, as
// scripts/build-images.sh writes them) into the containerd of the nodes
// named in args, default all, through kind's nodeutils.LoadImageArchive
// (`ctr images import` in the node), as `kind load image-archive` does.
func (p *Provider) LoadImageArchive(ctx context.Context, archivePath string, args ...string) error {
	selected, err := p.nodes(args)
	if err != nil {
		return fmt.Errorf("load image archive %s: %w", archivePath, err)
	}
	logger := klog.FromContext(ctx)
	for _, n := range selected {
		if err := loadArchive(archivePath, n); err != nil {
			return fmt.Errorf("load image archive %s on node %s: %w", archivePath, n, err)
		}
		logger.V(2).Info("Loaded image archive", "archive", archivePath, "node", n.String())
	}
	return nil
}

func loadArchive(archivePath string, n nodes.Node) error {
	f, err := os.Open(archivePath)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}

// NodeNames lists the cluster's node containers (the Kubernetes node names),
// without an external load balancer.
func (p *Provider) NodeNames(_ context.Context) ([]string, error) {
	list, err := p.kind.ListInternalNodes(p.name)
	if err != nil {
		return nil, fmt.Errorf("list nodes of kind cluster %s: %w", p.name, err)
	}
	names := make([]string, 0, len(list))
	for _, n := range list {
		names = append(names, n.String())
	}
	slices.Sort(names)
	return names, nil
}

// nodes returns the named nodes, or every node when names is empty.
func (p *Provider) nodes(names []string) ([]nodes.Node, error) {
	list, err := p.kind.ListInternalNodes(p.name)
	if err != nil {
		return nil, fmt.Errorf("list nodes of kind cluster %s: %w", p.name, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("kind cluster %s has no nodes", p.name)
	}
	if len(names) == 0 {
		return list, nil
	}
	var out []nodes.Node
	for _, name := range names {
		i := slices.IndexFunc(list, func(n nodes.Node) bool { return n.String() == name })
		if i < 0 {
			return nil, fmt.Errorf("kind cluster %s has no node %s", p.name, name)
		}
		out = append(out, list[i])
	}
	return out, nil
}

// RunOnNode runs argv in the node container (docker exec through kind's
// node command); the error carries the command's output.
func (p *Provider) RunOnNode(ctx context.Context, node string, argv []string) error {
	return p.runOnNode(ctx, node, NodeCommand{Argv: argv})
}

func (p *Provider) runOnNode(ctx context.Context, node string, c NodeCommand) error {
	if len(c.Argv) == 0 {
		return fmt.Errorf("run on node %s: empty command", node)
	}
	selected, err := p.nodes([]string{node})
	if err != nil {
		return fmt.Errorf("run %q on node %s: %w", c.Argv, node, err)
	}
	var out bytes.Buffer
	cmd := selected[0].CommandContext(ctx, c.Argv[0], c.Argv[1:]...).SetStdout(&out).SetStderr(&out)
	if c.Stdin != "" {
		f, err := os.Open(c.Stdin)
		if err != nil {
			return fmt.Errorf("run %q on node %s: %w", c.Argv, node, err)
		}
		defer f.Close()
		cmd.SetStdin(f)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run %q on node %s: %w: %s", c.Argv, node, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// RenderNode renders the emulated hardware inside node (RenderCommands).
func (p *Provider) RenderNode(ctx context.Context, node string, o RenderOptions) error {
	cmds, err := RenderCommands(node, o)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := p.runOnNode(ctx, node, c); err != nil {
			return fmt.Errorf("render emulated hardware: %w", err)
		}
	}
	klog.FromContext(ctx).Info("Rendered emulated hardware", "node", node, "root", EmulatorRoot)
	return nil
}

// APIServerPort is the port kubeadm's API server listens on in a
// control-plane node.
const APIServerPort = 6443

// APIServerEndpoint returns where the cluster's nodes and pods reach the
// API server: the first control-plane node's IPv4 address on the kind
// network and APIServerPort (the host's kubeconfig has a port published on
// the host's loopback instead, which pods cannot reach).
func (p *Provider) APIServerEndpoint() (string, int, error) {
	list, err := p.kind.ListInternalNodes(p.name)
	if err != nil {
		return "", 0, fmt.Errorf("find the API server of kind cluster %s: %w", p.name, err)
	}
	for _, n := range list {
		role, err := n.Role()
		if err != nil {
			return "", 0, fmt.Errorf("find the API server of kind cluster %s: node %s: %w", p.name, n, err)
		}
		if role != string(v1alpha4.ControlPlaneRole) {
			continue
		}
		ip, _, err := n.IP()
		if err != nil {
			return "", 0, fmt.Errorf("find the API server of kind cluster %s: node %s: %w", p.name, n, err)
		}
		return ip, APIServerPort, nil
	}
	return "", 0, fmt.Errorf("find the API server of kind cluster %s: no control-plane node", p.name)
}

// Exists reports whether kind knows a cluster of the provider's name.
func (p *Provider) Exists() (bool, error) {
	list, err := p.kind.List()
	if err != nil {
		return false, fmt.Errorf("list kind clusters: %w", err)
	}
	return slices.Contains(list, p.name), nil
}
