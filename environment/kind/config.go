package kind

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"drakit.dev/drakit/cluster"
)

// Paths inside every node container.
const (
	// EmulatorRoot is where each node's emulated hardware is rendered: the
	// reference driver's default driver root (reference/deploy), so the
	// driver's manifests apply unchanged.
	EmulatorRoot = "/var/lib/drakit/emulator"
	// NodeCDIDir is the node's CDI spec directory: the first of
	// cdi_spec_dirs in kind/cluster.yaml's containerd patch and the
	// reference driver's default CDI directory.
	NodeCDIDir = "/var/run/cdi"
	// NodeKubeletRootDir is the kubelet's root dir in the node (kubeadm's
	// and the reference driver's default).
	NodeKubeletRootDir = "/var/lib/kubelet"
)

// ErrInvalidConfig is wrapped by every error ParseConfig and Generate
// return for a configuration kind would not accept or the kit cannot use.
var ErrInvalidConfig = errors.New("invalid kind configuration")

// noneProxyMode deploys no kube-proxy; kind's internal config API names it
// (NoneProxyMode), its v1alpha4 package does not.
const noneProxyMode v1alpha4.ProxyMode = "none"

const (
	configAPIVersion = "kind.x-k8s.io/v1alpha4"
	configKind       = "Cluster"
)

// ParseConfig decodes a kind v1alpha4 Cluster configuration strictly (an
// unknown field is an error, as kind's own loader makes it) and checks what
// Generate relies on: the apiVersion and kind, at least one control-plane
// node, and only the roles kind knows. No nodes at all means one
// control-plane node, as kind defaults it.
func ParseConfig(raw []byte) (*v1alpha4.Cluster, error) {
	var cfg v1alpha4.Cluster
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("decode kind config: %w: %w", ErrInvalidConfig, err)
	}
	if cfg.APIVersion != configAPIVersion || cfg.Kind != configKind {
		return nil, fmt.Errorf("decode kind config: %w: apiVersion %q kind %q, want %s %s",
			ErrInvalidConfig, cfg.APIVersion, cfg.Kind, configAPIVersion, configKind)
	}
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}}
	}
	controlPlanes := 0
	for i, n := range cfg.Nodes {
		switch n.Role {
		case v1alpha4.ControlPlaneRole:
			controlPlanes++
		case v1alpha4.WorkerRole:
		default:
			return nil, fmt.Errorf("decode kind config: %w: nodes[%d]: role %q, want %s or %s",
				ErrInvalidConfig, i, n.Role, v1alpha4.ControlPlaneRole, v1alpha4.WorkerRole)
		}
	}
	if controlPlanes == 0 {
		return nil, fmt.Errorf("decode kind config: %w: no control-plane node", ErrInvalidConfig)
	}
	return &cfg, nil
}

// MarshalConfig encodes cfg as kind reads it.
func MarshalConfig(cfg *v1alpha4.Cluster) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, fmt.Errorf("encode kind config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode kind config: %w", err)
	}
	return buf.Bytes(), nil
}

// ConfigOptions are the kit's additions to the repository's
// kind/cluster.yaml.
type ConfigOptions struct {
	// ClusterName is the kind cluster's name; node container names derive
	// from it (NodeNames).
	ClusterName string
	// NodeImage is set as every node's image: the offline node image
	// (environment/kind/nodeimage). Empty keeps the base's images (kind's
	// default when those are empty too).
	NodeImage string
	// Workers is the number of worker nodes. Each is a copy of the base's
	// first worker (its labels, patches and mounts), or a plain worker when
	// the base has none. Negative keeps the base's workers as they are.
	Workers int
	// StateDir is a host directory holding one directory per node,
	// StateDir/<node>/emulator, StateDir/<node>/cdi and
	// StateDir/<node>/kubelet, mounted at EmulatorRoot, NodeCDIDir and
	// NodeKubeletRootDir in that node: the emulated hardware is rendered in
	// the node (RenderCommands) and stays readable from the host, where
	// the kit compares it with what the driver publishes, and the kit
	// reads the kubelet's plugin registry, DRA checkpoint and pod-resources
	// socket there. Any mount of the base at those container paths is
	// replaced. Empty: no mounts are added and the base's are kept.
	StateDir string
	// Offline configures a cluster whose node image carries no kindnetd
	// and no kube-proxy image (nodeimage builds none): kind's default CNI
	// is disabled (the node image's static CNI configuration serves) and
	// kube-proxy is not deployed.
	Offline bool
}

// NodeStateDirs are a node's host directories under ConfigOptions.StateDir.
type NodeStateDirs struct {
	// Emulator is mounted at EmulatorRoot.
	Emulator string
	// CDI is mounted at NodeCDIDir.
	CDI string
	// Kubelet is mounted at NodeKubeletRootDir with no propagation
	// (kubeletMount).
	Kubelet string
}

// StateDirs returns node's host directories under stateDir.
func StateDirs(stateDir, node string) NodeStateDirs {
	return NodeStateDirs{
		Emulator: filepath.Join(stateDir, node, "emulator"),
		CDI:      filepath.Join(stateDir, node, "cdi"),
		Kubelet:  filepath.Join(stateDir, node, "kubelet"),
	}
}

// Generate returns a copy of base with opts applied; base is not changed.
func Generate(base *v1alpha4.Cluster, opts ConfigOptions) (*v1alpha4.Cluster, error) {
	if opts.ClusterName == "" {
		return nil, fmt.Errorf("generate kind config: %w: cluster name required", ErrInvalidConfig)
	}
	if opts.StateDir != "" && !filepath.IsAbs(opts.StateDir) {
		return nil, fmt.Errorf("generate kind config: %w: state dir %q must be absolute", ErrInvalidConfig, opts.StateDir)
	}
	cfg := base.DeepCopy()
	cfg.Name = opts.ClusterName
	if opts.Workers >= 0 {
		cfg.Nodes = withWorkers(cfg.Nodes, opts.Workers)
	}
	if opts.Offline {
		cfg.Networking.DisableDefaultCNI = true
		cfg.Networking.KubeProxyMode = noneProxyMode
	}
	names := NodeNames(opts.ClusterName, cfg)
	for i := range cfg.Nodes {
		n := &cfg.Nodes[i]
		if opts.NodeImage != "" {
			n.Image = opts.NodeImage
		}
		if opts.StateDir != "" {
			dirs := StateDirs(opts.StateDir, names[i])
			n.ExtraMounts = withMount(n.ExtraMounts, v1alpha4.Mount{HostPath: dirs.Emulator, ContainerPath: EmulatorRoot})
			n.ExtraMounts = withMount(n.ExtraMounts, v1alpha4.Mount{HostPath: dirs.CDI, ContainerPath: NodeCDIDir})
			n.ExtraMounts = withMount(n.ExtraMounts, kubeletMount(dirs.Kubelet))
			if n.Role == v1alpha4.ControlPlaneRole {
				n.ExtraMounts = withMount(n.ExtraMounts, v1alpha4.Mount{
					HostPath: SchedulerConfigPath(opts.StateDir), ContainerPath: NodeSchedulerConfig, Readonly: true,
				})
				n.KubeadmConfigPatchesJSON6902 = append(n.KubeadmConfigPatchesJSON6902, schedulerConfigPatch)
			}
		}
	}
	return cfg, nil
}

// NodeSchedulerConfig is where a control-plane node finds the scheduler
// configuration of the state dir (SchedulerConfigPath), which its
// kube-scheduler reads with --config.
const NodeSchedulerConfig = "/etc/kubernetes/drakit-scheduler-config.yaml"

// SchedulerBindingTimeout is the DynamicResources plugin's bindingTimeout
// of a kind cluster with a state dir, the local cluster's
// (cluster.SchedulerBindingTimeout): the default of 10 minutes is more
// than a conformance run waits for a device whose binding conditions never
// hold (KEP-5007).
const SchedulerBindingTimeout = cluster.SchedulerBindingTimeout

// SchedulerConfigPath is the scheduler configuration's host file in
// stateDir; the provider writes SchedulerConfigYAML there on create.
func SchedulerConfigPath(stateDir string) string {
	return filepath.Join(stateDir, "scheduler-config.yaml")
}

// SchedulerConfigYAML is kube-scheduler's configuration in a kind
// control-plane node: kubeadm's scheduler kubeconfig and leader election,
// and the DynamicResources plugin's bindingTimeout.
var SchedulerConfigYAML = []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
leaderElection:
  leaderElect: true
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DynamicResources
    args:
      bindingTimeout: ` + SchedulerBindingTimeout.String() + `
`)

// schedulerConfigPatch makes kubeadm start kube-scheduler with --config
// NodeSchedulerConfig, mounted into its static pod; kind's own scheduler
// arguments (the feature gates) stay.
var schedulerConfigPatch = v1alpha4.PatchJSON6902{
	Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration",
	Patch: `- op: add
  path: /scheduler/extraArgs/-
  value: {name: config, value: ` + NodeSchedulerConfig + `}
- op: add
  path: /scheduler/extraVolumes
  value:
  - {name: drakit-scheduler-config, hostPath: ` + NodeSchedulerConfig + `, mountPath: ` + NodeSchedulerConfig + `, readOnly: true, pathType: File}
`,
}

// kubeletMount mounts hostPath at the node's kubelet root dir with
// propagation None (a private bind mount): the kubelet's own mounts under
// it (pod volumes) stay in the node's mount namespace and never appear on
// the host, so deleting the node leaves plain files under the state dir,
// and no host mount has to be made shared (Bidirectional needs a shared
// host mount; HostToContainer a shared or slave one). The kubelet works on
// it as on its own dir: kind's entrypoint makes the node's mounts rshared
// and the kubelet makes its root dir rshared itself. What the kit reads
// there are files and sockets, not mounts: plugins_registry/,
// dra_manager_state and pod-resources/kubelet.sock.
func kubeletMount(hostPath string) v1alpha4.Mount {
	return v1alpha4.Mount{HostPath: hostPath, ContainerPath: NodeKubeletRootDir, Propagation: v1alpha4.MountPropagationNone}
}

// withWorkers keeps nodes' control planes in order and appends n workers
// copied from the first worker.
func withWorkers(nodes []v1alpha4.Node, n int) []v1alpha4.Node {
	template := v1alpha4.Node{Role: v1alpha4.WorkerRole}
	var out []v1alpha4.Node
	found := false
	for _, node := range nodes {
		if node.Role == v1alpha4.WorkerRole {
			if !found {
				template, found = *node.DeepCopy(), true
			}
			continue
		}
		out = append(out, node)
	}
	for range n {
		out = append(out, *template.DeepCopy())
	}
	return out
}

// withMount replaces the mount at m.ContainerPath, or appends m.
func withMount(mounts []v1alpha4.Mount, m v1alpha4.Mount) []v1alpha4.Mount {
	for i := range mounts {
		if filepath.Clean(mounts[i].ContainerPath) == m.ContainerPath {
			mounts[i] = m
			return mounts
		}
	}
	return append(mounts, m)
}

// NodeNames returns the container names kind gives cfg's nodes, in cfg's
// order: <cluster>-<role> for the first node of a role and
// <cluster>-<role><n> for the n-th after it (kind's
// pkg/cluster/internal/providers/common.MakeNodeNamer).
func NodeNames(clusterName string, cfg *v1alpha4.Cluster) []string {
	counter := map[v1alpha4.NodeRole]int{}
	names := make([]string, 0, len(cfg.Nodes))
	for _, n := range cfg.Nodes {
		counter[n.Role]++
		suffix := ""
		if c := counter[n.Role]; c > 1 {
			suffix = fmt.Sprint(c)
		}
		names = append(names, strings.Join([]string{clusterName, string(n.Role)}, "-")+suffix)
	}
	return names
}
