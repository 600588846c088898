package environment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"drakit.dev/drakit/cluster"
)

// Local is the provider of drakit's local process cluster (package
// cluster). Its nodes are processes on this host: RunOnNode runs on the
// host, and the nodes' paths are the host's.
type Local struct {
	cfg cluster.Config
	// drakit is the binary RunOnNode runs for argv[0] "drakit".
	drakit string
	// shim is the built NVML shim render installs.
	shim string
}

// NewLocal returns the provider of the local cluster cfg describes; drakit
// is the drakit binary run on the nodes (WithPath changes it), shim the
// built NVML shim (empty: none).
func NewLocal(cfg cluster.Config, drakit, shim string) *Local {
	return &Local{cfg: cfg, drakit: drakit, shim: shim}
}

var (
	_ types.E2EClusterProviderWithImageLoader = (*Local)(nil)
	_ NodeAccess                              = (*Local)(nil)
	_ NodeLayout                              = (*Local)(nil)
	_ Runner                                  = (*Local)(nil)
)

// WithName does nothing: the local cluster is named by its run dir.
func (l *Local) WithName(string) types.E2EClusterProvider { return l }

// WithVersion sets the Kubernetes version of the components.
func (l *Local) WithVersion(version string) types.E2EClusterProvider {
	l.cfg.KubernetesVersion = version
	return l
}

// WithPath sets the drakit binary RunOnNode runs.
func (l *Local) WithPath(path string) types.E2EClusterProvider {
	l.drakit = path
	return l
}

// WithOpts applies opts to the provider.
func (l *Local) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(l)
	}
	return l
}

// SetDefaults does nothing: NewLocal has every setting.
func (l *Local) SetDefaults() types.E2EClusterProvider { return l }

// Running reports whether the cluster is up (cluster status).
func (l *Local) Running(ctx context.Context) (bool, error) {
	st, err := cluster.Status(ctx, l.config())
	if err != nil {
		return false, err
	}
	return st.Up, nil
}

// config returns the cluster's config with the node count Up recorded, if
// any (a running cluster keeps its nodes).
func (l *Local) config() cluster.Config {
	cfg := l.cfg
	if n, ok, err := cluster.RecordedNodes(cfg); err == nil && ok {
		cfg.Nodes = n
	}
	return cfg
}

// Create brings the cluster up with its nodes, importing the images dir
// (cluster up; a running cluster is confirmed), and returns its
// kubeconfig. It takes no arguments.
func (l *Local) Create(ctx context.Context, args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("create the local cluster: unexpected arguments %q (the local cluster is configured by cluster.Config)", args)
	}
	if err := cluster.Up(ctx, l.cfg); err != nil {
		return "", err
	}
	return cluster.KubeconfigPath(l.cfg), nil
}

// CreateWithConfig is refused: the local cluster has no configuration
// file.
func (l *Local) CreateWithConfig(_ context.Context, configFile string) (string, error) {
	return "", fmt.Errorf("create the local cluster with %s: the local cluster is configured by cluster.Config (drakit's cluster flags), not a file", configFile)
}

// GetKubeconfig returns the cluster's kubeconfig path.
func (l *Local) GetKubeconfig() string { return cluster.KubeconfigPath(l.cfg) }

// GenerateKubeconfig returns the cluster's kubeconfig path: up writes it.
func (l *Local) GenerateKubeconfig(...string) (string, error) { return l.GetKubeconfig(), nil }

// GetKubectlContext returns the kubeconfig's context, "drakit".
func (l *Local) GetKubectlContext() string {
	kc, err := clientcmd.LoadFromFile(l.GetKubeconfig())
	if err != nil {
		return ""
	}
	return kc.CurrentContext
}

// WaitForControlPlane returns at once: Create waits for every component,
// every Node Ready and the default ServiceAccount.
func (l *Local) WaitForControlPlane(context.Context, klient.Client) error { return nil }

// KubernetesRestConfig returns a rest config of the cluster (nil when its
// kubeconfig cannot be read).
func (l *Local) KubernetesRestConfig() *rest.Config {
	rc, err := clientcmd.BuildConfigFromFlags("", l.GetKubeconfig())
	if err != nil {
		return nil
	}
	return rc
}

// Destroy tears the cluster down (cluster down; nothing without one).
func (l *Local) Destroy(ctx context.Context) error { return cluster.Down(ctx, l.cfg) }

// LoadImage is refused: the local cluster has no registry and no image
// store but its containerds; load docker-archives with LoadImageArchive.
func (l *Local) LoadImage(_ context.Context, image string, _ ...string) error {
	return fmt.Errorf("load image %s: the local cluster imports docker-archives only (LoadImageArchive)", image)
}

// LoadImageArchive imports a docker-archive into every node's containerd
// (images import), unless Up imported that very file after its last
// change.
func (l *Local) LoadImageArchive(ctx context.Context, archivePath string, _ ...string) error {
	cfg := l.config()
	if cluster.Imported(cfg, archivePath) {
		klog.FromContext(ctx).V(1).Info("Image archive already imported by cluster up", "archive", archivePath)
		return nil
	}
	return cluster.ImportImage(ctx, cfg, archivePath)
}

// ExportLogs copies the logs of the run dir to dest: the control plane's
// and node 1's into dest, node i's into dest/node-<i>. Without a run dir
// there is nothing to copy.
func (l *Local) ExportLogs(ctx context.Context, dest string) error {
	for _, n := range cluster.AllNodes(l.config()) {
		to := dest
		if n.Index > 1 {
			to = filepath.Join(dest, "node-"+strconv.Itoa(n.Index))
		}
		if err := copyTree(filepath.Join(n.Dir, "logs"), to); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).V(1).Info("Exported the cluster's logs", "to", dest)
	return nil
}

// localHTTPPortStep is how far apart two local nodes' driver ports are:
// more than the span of the reference drivers' default ports (9470..9474).
const localHTTPPortStep = 10

// NodeNames returns the names of the nodes Up recorded (else the
// configured ones).
func (l *Local) NodeNames(context.Context) ([]string, error) {
	var names []string
	for _, n := range cluster.AllNodes(l.config()) {
		names = append(names, n.Name)
	}
	return names, nil
}

// Node returns a node's paths: its own dirs of the run dir, node 1's the
// run dir's.
func (l *Local) Node(_ context.Context, name string) (Node, error) {
	nodes := cluster.AllNodes(l.config())
	i := slices.IndexFunc(nodes, func(n cluster.Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, fmt.Errorf("node %s: not a node of the local cluster in %s", name, l.cfg.RunDir)
	}
	n := nodes[i]
	return Node{
		Name: n.Name, KubeletRootDir: n.KubeletRootDir, CDIDir: n.CDIDir, EmulatorRoot: n.EmulatorRoot,
		ShimLibrary: l.shim, StateDir: n.Dir, LogDir: filepath.Join(n.Dir, "logs"), OnHost: true,
		// The nodes share the host's loopback: node i's drivers serve
		// their HTTP endpoints 10*(i-1) ports above the defaults (node 1
		// on the defaults, as on a one-node cluster).
		HTTPPortOffset: localHTTPPortStep * (n.Index - 1),
	}, nil
}

// RunOnNode runs argv on the host (every node's file system is the
// host's); argv[0] "drakit" is the provider's drakit binary.
func (l *Local) RunOnNode(ctx context.Context, node string, argv []string) error {
	names, _ := l.NodeNames(ctx)
	if !slices.Contains(names, node) {
		return fmt.Errorf("run %s on node %s: not a node of the local cluster in %s", strings.Join(argv, " "), node, l.cfg.RunDir)
	}
	if len(argv) == 0 {
		return fmt.Errorf("run on node %s: empty command", node)
	}
	bin := argv[0]
	if bin == "drakit" {
		bin = l.drakit
	}
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	klog.FromContext(ctx).V(1).Info("Ran on node", "node", node, "argv", argv, "output", strings.TrimSpace(string(out)))
	return nil
}

// copyTree copies the regular files below src into dst, replacing what
// is there; a missing src copies nothing.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil // sockets, links: not logs
	})
	if err != nil {
		return fmt.Errorf("copy logs %s to %s: %w", src, dst, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
