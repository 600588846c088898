package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
)

// ErrUnknownComponent is returned for a component name not in Components().
var ErrUnknownComponent = errors.New("unknown component")

// State is the state of a cluster and the paths other tools need. Its node
// fields are node 1's (as in a single-node cluster); Nodes has every node.
type State struct {
	// Up is true when every component of every node runs and is healthy
	// and every Node is Ready without the not-ready taint.
	Up        bool   `json:"up"`
	NodeName  string `json:"nodeName"`
	NodeState string `json:"nodeState"`

	RunDir         string `json:"runDir"`
	Kubeconfig     string `json:"kubeconfig"`
	APIServer      string `json:"apiServer"`
	CDIDir         string `json:"cdiDir"`
	KubeletRootDir string `json:"kubeletRootDir"`
	// MaxDriverName is the longest driver name (bytes) whose per-pod DRA
	// socket (PerPodDRASocket) fits the unix socket limit on every node.
	MaxDriverName int    `json:"maxDriverName"`
	EmulatorRoot  string `json:"emulatorRoot"`
	// ImagesDir is the images dir Up imported from (its record in the run
	// dir), else the configured one; Images are the archives Up imported.
	ImagesDir        string   `json:"imagesDir"`
	Images           []string `json:"images,omitempty"`
	ContainerdSocket string   `json:"containerdSocket"`
	Kubectl          string   `json:"kubectl"`

	// Components are the control plane's and node 1's.
	Components []ComponentState `json:"components"`
	// Nodes are all nodes, node 1 first.
	Nodes []NodeState `json:"nodes"`
}

// NodeState is the state of one node: its paths, Node state and its own
// containerd and kubelet.
type NodeState struct {
	Node
	State      string           `json:"state"`
	Components []ComponentState `json:"components"`
}

// ComponentState is the state of one component.
type ComponentState struct {
	Name     string `json:"name"`
	PID      int    `json:"pid,omitempty"`
	Running  bool   `json:"running"`
	Healthy  bool   `json:"healthy"`
	RSSBytes int64  `json:"rssBytes,omitempty"`
	Log      string `json:"log"`
	// Detail says why a running component is not healthy.
	Detail string `json:"detail,omitempty"`
}

// Status reports each component (by PID file and readiness endpoint) and
// every Node; the nodes are those Up recorded in RunDir, else cfg.Nodes. It
// starts and changes nothing, and needs no root.
func Status(ctx context.Context, cfg Config) (State, error) {
	if err := cfg.Validate(); err != nil {
		return State{}, err
	}
	cfg, err := withRecordedNodes(cfg)
	if err != nil {
		return State{}, err
	}
	kubectl, _ := BinaryPath(cfg, "kubectl")
	st := State{
		NodeName: nodeName(cfg), NodeState: string(nodeAbsent),
		RunDir: cfg.RunDir, Kubeconfig: KubeconfigPath(cfg), APIServer: APIServerURL(cfg),
		CDIDir: CDIDir(cfg), KubeletRootDir: KubeletRootDir(cfg), EmulatorRoot: EmulatorRoot(cfg),
		ImagesDir: cfg.ImagesDir, ContainerdSocket: ContainerdSocket(cfg), Kubectl: kubectl,
		// The last node's root dir is the longest.
		MaxDriverName: MaxDriverName(KubeletRootDir(cfg.node(cfg.Nodes))),
	}
	if rec, ok := readImportedImages(cfg); ok {
		st.ImagesDir, st.Images = rec.Dir, rec.Archives
	}
	allHealthy, apiHealthy := true, false
	for _, name := range []string{Etcd, APIServer, ControllerManager, Scheduler} {
		cs := componentState(ctx, cfg, name)
		allHealthy = allHealthy && cs.Healthy
		apiHealthy = apiHealthy || (name == APIServer && cs.Healthy)
		st.Components = append(st.Components, cs)
	}
	var client kubernetes.Interface
	if apiHealthy {
		client, _ = Client(cfg)
	}
	allSchedulable := true
	for i, n := range cfg.nodes() {
		ns := NodeState{State: string(nodeAbsent)}
		ns.Node, _ = NodePaths(cfg, i+1)
		for _, name := range []string{Containerd, Kubelet} {
			cs := componentState(ctx, n, name)
			allHealthy = allHealthy && cs.Healthy
			ns.Components = append(ns.Components, cs)
		}
		if client != nil {
			state, _ := nodeState(ctx, client, nodeName(n))
			ns.State = string(state)
		}
		allSchedulable = allSchedulable && ns.State == string(nodeSchedulable)
		st.Nodes = append(st.Nodes, ns)
	}
	st.Components = append(st.Components, st.Nodes[0].Components...)
	st.NodeState = st.Nodes[0].State
	st.Up = allHealthy && allSchedulable
	return st, nil
}

// componentState reports one component by its PID file and readiness
// endpoint.
func componentState(ctx context.Context, cfg Config, name string) ComponentState {
	cs := ComponentState{Name: name, Log: LogPath(cfg, name)}
	p, err := runningProcess(cfg, name)
	switch {
	case err != nil:
		cs.Detail = err.Error()
	case p != nil:
		cs.PID, cs.Running = p.ref.PID, true
		cs.RSSBytes, _ = rssBytes(p.ref.PID)
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := probes(cfg)[name](pctx); err != nil {
			cs.Detail = err.Error()
		} else {
			cs.Healthy = true
		}
		cancel()
	}
	return cs
}

// Logs returns the last tail lines of a component's log (tail <= 0: all);
// containerd's and the kubelet's are node 1's.
func Logs(cfg Config, component string, tail int) (string, error) {
	return NodeLogs(cfg, 1, component, tail)
}

// NodeLogs is Logs for containerd or the kubelet of node i (of the nodes Up
// recorded, else cfg.Nodes); the control plane's components are node 1's.
func NodeLogs(cfg Config, i int, component string, tail int) (string, error) {
	cfg, err := withRecordedNodes(cfg)
	if err != nil {
		return "", err
	}
	if i < 1 || i > cfg.Nodes {
		return "", fmt.Errorf("read log of %s: node %d: the cluster has nodes 1..%d", component, i, cfg.Nodes)
	}
	if component == Containerd || component == Kubelet {
		cfg = cfg.node(i)
	}
	if !slices.Contains(Components(), component) {
		return "", fmt.Errorf("%w %q (components: %v)", ErrUnknownComponent, component, Components())
	}
	s, err := tailFile(LogPath(cfg, component), tail)
	if isNotExist(err) {
		return "", fmt.Errorf("read log of %s: no log at %s (the cluster never started it)", component, LogPath(cfg, component))
	}
	if err != nil {
		return "", fmt.Errorf("read log of %s: %w", component, err)
	}
	return s, nil
}
