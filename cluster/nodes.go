package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
)

// MaxNodes is the most nodes (kubelets, each with its own containerd) one
// local cluster runs.
const MaxNodes = 16

// Node is one node of the cluster: its name and the host paths of its own
// kubelet and containerd. Node 1 keeps the single-node layout directly in
// RunDir; node i > 1 lives in <RunDir>/nodes/<i>.
type Node struct {
	// Index counts from 1.
	Index int `json:"index"`
	// Name is the Node's name and the kubelet's address: Config.NodeName
	// plus Index-1 (127.0.0.1, 127.0.0.2, ... by default).
	Name string `json:"name"`
	// Dir holds the node's containerd, kubelet, logs and PID files.
	Dir              string `json:"dir"`
	KubeletRootDir   string `json:"kubeletRootDir"`
	CDIDir           string `json:"cdiDir"`
	EmulatorRoot     string `json:"emulatorRoot"`
	ContainerdSocket string `json:"containerdSocket"`
	// CgroupRoot is the kubelet's cgroupRoot: Config.CgroupRoot for node 1,
	// Config.CgroupRoot-<i> for node i.
	CgroupRoot string `json:"cgroupRoot"`
}

// NodePaths returns node i (1..cfg.Nodes) of the cluster cfg describes.
func NodePaths(cfg Config, i int) (Node, error) {
	if i < 1 || i > cfg.Nodes {
		return Node{}, fmt.Errorf("node %d: the cluster has nodes 1..%d", i, cfg.Nodes)
	}
	n := cfg.node(i)
	return Node{
		Index: i, Name: nodeName(n), Dir: nodeDir(n),
		KubeletRootDir: KubeletRootDir(n), CDIDir: CDIDir(n), EmulatorRoot: EmulatorRoot(n),
		ContainerdSocket: ContainerdSocket(n), CgroupRoot: cgroupRoot(n),
	}, nil
}

// AllNodes returns every node of the cluster cfg describes, in index order.
func AllNodes(cfg Config) []Node {
	nodes := make([]Node, 0, cfg.Nodes)
	for i := 1; i <= cfg.Nodes; i++ {
		n, _ := NodePaths(cfg, i) // i is in range
		nodes = append(nodes, n)
	}
	return nodes
}

// node narrows the cluster's config to node i: the path functions, the
// kubelet's and containerd's configuration and their processes then
// describe that node. It is only ever called on the cluster's config.
func (c Config) node(i int) Config {
	c.nodeIndex = i
	return c
}

// nodes narrows the cluster's config to each of its nodes.
func (c Config) nodes() []Config {
	out := make([]Config, 0, c.Nodes)
	for i := 1; i <= c.Nodes; i++ {
		out = append(out, c.node(i))
	}
	return out
}

// index is the node a config is narrowed to; the cluster's config is node 1.
func (c Config) index() int { return max(c.nodeIndex, 1) }

// nodeDir is the directory of a node's own state: RunDir for node 1.
func nodeDir(cfg Config) string {
	if cfg.index() == 1 {
		return cfg.RunDir
	}
	return filepath.Join(cfg.RunDir, "nodes", strconv.Itoa(cfg.index()))
}

// nodeName is the name of a node: Config.NodeName plus its index less one.
// Validate checks that the last one is an IPv4 address in 127.0.0.0/8; a
// name that is no address is returned as it is (Validate reports it).
func nodeName(cfg Config) string {
	a, err := netip.ParseAddr(cfg.NodeName)
	if err != nil {
		return cfg.NodeName
	}
	for range cfg.index() - 1 {
		a = a.Next()
	}
	return a.String()
}

// cgroupRoot is a node's kubelet cgroupRoot.
func cgroupRoot(cfg Config) string {
	if cfg.index() == 1 {
		return cfg.CgroupRoot
	}
	return cfg.CgroupRoot + "-" + strconv.Itoa(cfg.index())
}

// nodesRecord is how many nodes Up brought up in a run dir, so that Down
// and Status find them all without being told.
type nodesRecord struct {
	Nodes int `json:"nodes"`
}

func nodesRecordPath(cfg Config) string { return filepath.Join(cfg.RunDir, "nodes.json") }

// RecordedNodes returns the node count Up recorded in RunDir; ok is false
// when there is none (no Up yet, or a run dir of a single-node drakit).
func RecordedNodes(cfg Config) (n int, ok bool, err error) { return recordedNodes(cfg) }

func recordedNodes(cfg Config) (int, bool, error) {
	b, err := os.ReadFile(nodesRecordPath(cfg))
	if isNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read node record: %w", err)
	}
	var rec nodesRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Nodes < 1 || rec.Nodes > MaxNodes {
		return 0, false, fmt.Errorf("read node record %s: %q is not {\"nodes\": 1..%d}", nodesRecordPath(cfg), b, MaxNodes)
	}
	return rec.Nodes, true, nil
}

// withRecordedNodes returns cfg with Nodes set to the count Up recorded, if
// any: Down and Status act on every node Up started, whatever --nodes says.
func withRecordedNodes(cfg Config) (Config, error) {
	n, ok, err := recordedNodes(cfg)
	if err != nil {
		return cfg, err
	}
	if ok {
		cfg.Nodes = n
	}
	return cfg, nil
}

// ensureNodesRecord records cfg.Nodes in RunDir, or checks that it matches
// the count an earlier Up recorded: a run dir's nodes are fixed from its
// first Up (their PKI and cgroup roots are recorded then).
func ensureNodesRecord(cfg Config) error {
	n, ok, err := recordedNodes(cfg)
	if err != nil {
		return err
	}
	if ok {
		if n != cfg.Nodes {
			return fmt.Errorf("%w: Nodes: the cluster in %s was brought up with --nodes %d, not %d: pass --nodes %d or run drakit env down first",
				ErrInvalidConfig, cfg.RunDir, n, cfg.Nodes, n)
		}
		return nil
	}
	b, err := json.Marshal(nodesRecord{Nodes: cfg.Nodes})
	if err != nil {
		return fmt.Errorf("record nodes: %w", err)
	}
	if err := writeFileAtomic(nodesRecordPath(cfg), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record nodes: %w", err)
	}
	return nil
}
