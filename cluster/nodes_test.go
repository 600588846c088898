package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// multiNodeConfig is a four-node cluster in /r.
func multiNodeConfig() Config {
	cfg := DefaultConfig()
	cfg.RunDir, cfg.Nodes = "/r", 4
	return cfg
}

func TestNodePaths(t *testing.T) {
	cfg := multiNodeConfig()
	first, err := NodePaths(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Node 1 keeps the single-node layout, the same paths the cluster-wide
	// functions return.
	want1 := Node{Index: 1, Name: "127.0.0.1", Dir: "/r", KubeletRootDir: "/run/drakit/k1", CDIDir: "/r/cdi",
		EmulatorRoot: "/r/emulator", ContainerdSocket: "/r/containerd/containerd.sock", CgroupRoot: "/drakit-kubelet"}
	if diff := cmp.Diff(want1, first); diff != "" {
		t.Errorf("node 1 (-want +got):\n%s", diff)
	}
	if first.KubeletRootDir != KubeletRootDir(cfg) || first.CDIDir != CDIDir(cfg) || first.EmulatorRoot != EmulatorRoot(cfg) ||
		first.ContainerdSocket != ContainerdSocket(cfg) {
		t.Errorf("node 1 %+v differs from the cluster's KubeletRootDir/CDIDir/EmulatorRoot/ContainerdSocket", first)
	}
	third, err := NodePaths(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	want3 := Node{Index: 3, Name: "127.0.0.3", Dir: "/r/nodes/3", KubeletRootDir: "/run/drakit/k3", CDIDir: "/r/nodes/3/cdi",
		EmulatorRoot: "/r/nodes/3/emulator", ContainerdSocket: "/r/nodes/3/containerd/containerd.sock", CgroupRoot: "/drakit-kubelet-3"}
	if diff := cmp.Diff(want3, third); diff != "" {
		t.Errorf("node 3 (-want +got):\n%s", diff)
	}
	for _, i := range []int{0, 5} {
		if _, err := NodePaths(cfg, i); err == nil {
			t.Errorf("NodePaths(cfg, %d) of a 4-node cluster: no error", i)
		}
	}
	all := AllNodes(cfg)
	if len(all) != 4 || all[3].Name != "127.0.0.4" || all[1].Dir != "/r/nodes/2" {
		t.Errorf("AllNodes = %+v", all)
	}
	// Node names count up from --node-name, across an octet.
	cfg.NodeName = "127.0.0.254"
	if n, _ := NodePaths(cfg, 3); n.Name != "127.0.1.0" {
		t.Errorf("node 3 after 127.0.0.254 is %s, want 127.0.1.0", n.Name)
	}
	// A node's logs and PID files are its own; the control plane's stay in
	// RunDir.
	n2 := cfg.node(2)
	if LogPath(n2, Kubelet) != "/r/nodes/2/logs/kubelet.log" || pidPath(n2, Containerd) != "/r/nodes/2/pids/containerd.pid" ||
		LogPath(cfg, APIServer) != "/r/logs/kube-apiserver.log" || pkiDir(n2) != "/r/pki" {
		t.Errorf("node 2 log %s, pid %s; cluster log %s; node 2 pki %s", LogPath(n2, Kubelet), pidPath(n2, Containerd), LogPath(cfg, APIServer), pkiDir(n2))
	}
}

func TestConfigValidateNodes(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string // "" = valid, else text of the error
	}{
		{"one node", func(c *Config) { c.Nodes = 1 }, ""},
		{"most nodes", func(c *Config) { c.Nodes = MaxNodes }, ""},
		{"no nodes", func(c *Config) { c.Nodes = 0 }, "Nodes: 0 is outside 1..16"},
		{"too many nodes", func(c *Config) { c.Nodes = MaxNodes + 1 }, "Nodes: 17 is outside 1..16"},
		{"last node leaves loopback", func(c *Config) { c.NodeName, c.Nodes = "127.255.255.254", 3 }, "NodeName: \"127.255.255.254\": node 3 would be 128.0.0.0"},
		// 67 bytes: node 1's containerd socket fits, node 16's (in nodes/16) does not.
		{"run dir too long for the last node", func(c *Config) { c.RunDir = "/tmp/" + strings.Repeat("d", 62); c.Nodes = 16 }, "RunDir"},
		{"run dir fits one node", func(c *Config) { c.RunDir = "/tmp/" + strings.Repeat("d", 62); c.Nodes = 1 }, ""},
		// 17 bytes: node 9's root dir (k9) leaves room for 32-byte driver names, node 10's (k10) does not.
		{"kubelet root base too long for node 10", func(c *Config) { c.KubeletRootBase = "/run/" + strings.Repeat("d", 12); c.Nodes = 10 },
			"KubeletRootBase: \"/run/dddddddddddd\" is 1 bytes too long: node 10's per-pod DRA socket"},
		{"kubelet root base fits 9 nodes", func(c *Config) { c.KubeletRootBase = "/run/" + strings.Repeat("d", 12); c.Nodes = 9 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RunDir = "/tmp/drakit-cluster"
			tc.modify(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want ErrInvalidConfig with %q", err, tc.want)
			}
		})
	}
}

func TestRenderExtraNode(t *testing.T) {
	cfg := multiNodeConfig()
	n3 := cfg.node(3)
	b, err := kubeletConfig(n3)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"cgroupRoot":               "/drakit-kubelet-3",
		"containerRuntimeEndpoint": "unix:///r/nodes/3/containerd/containerd.sock",
		"address":                  "127.0.0.3",
		"healthzBindAddress":       "127.0.0.3",
		"port":                     float64(10250),
		"podLogsDir":               "/r/nodes/3/kubelet/pod-logs",
		"tlsCertFile":              "/r/pki/kubelet-serving-3.crt",
		"tlsPrivateKeyFile":        "/r/pki/kubelet-serving-3.key",
	} {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("node 3 kubelet config %s (-want +got):\n%s", k, diff)
		}
	}
	args := componentArgs(n3)[Kubelet]
	for _, want := range []string{"--hostname-override=127.0.0.3", "--root-dir=/run/drakit/k3",
		"--kubeconfig=/r/pki/kubelet-3.kubeconfig", "--config=/r/nodes/3/kubelet/config.yaml"} {
		if !contains(args, want) {
			t.Errorf("node 3 kubelet args %v lack %s", args, want)
		}
	}
	if got := componentArgs(n3)[Containerd]; !contains(got, "--config=/r/nodes/3/containerd/config.toml") {
		t.Errorf("node 3 containerd args %v", got)
	}
	toml := containerdConfig(n3, "pause:dev")
	for _, want := range []string{`root = "/r/nodes/3/containerd/root"`, `address = "/r/nodes/3/containerd/containerd.sock"`,
		`cdi_spec_dirs = ["/r/nodes/3/cdi"]`, `"/r/nodes/3/containerd/base-spec-`} {
		if !strings.Contains(toml, want) {
			t.Errorf("node 3 containerd config lacks %s:\n%s", want, toml)
		}
	}
	if strings.Contains(toml, `"/r/containerd`) || strings.Contains(toml, `"/r/cdi"`) {
		t.Errorf("node 3 containerd config names node 1's paths:\n%s", toml)
	}
	if !strings.Contains(crictlConfig(n3), "unix:///r/nodes/3/containerd/containerd.sock") {
		t.Errorf("node 3 crictl config: %s", crictlConfig(n3))
	}
	// Down finds every node's mounts and cgroup roots.
	areas := mountAreas(cfg)
	for _, want := range []string{"/run/drakit/k1", "/r/kubelet/root", "/r/containerd", "/run/drakit/k4", "/r/nodes/4/kubelet/root", "/r/nodes/4/containerd"} {
		if !contains(areas, want) {
			t.Errorf("mount areas %v lack %s", areas, want)
		}
	}
	mounts := []mountEntry{{MountPoint: "/sys/fs/cgroup", FSType: "cgroup2"}}
	if got, want := cgroupRootDirs(cfg, mounts), []string{"/sys/fs/cgroup/drakit-kubelet", "/sys/fs/cgroup/drakit-kubelet-2",
		"/sys/fs/cgroup/drakit-kubelet-3", "/sys/fs/cgroup/drakit-kubelet-4"}; !cmp.Equal(got, want) {
		t.Errorf("cgroup root dirs %v, want %v", got, want)
	}
	if got := cgroupRootDirs(n3, mounts); !cmp.Equal(got, []string{"/sys/fs/cgroup/drakit-kubelet-3"}) {
		t.Errorf("node 3's cgroup root dirs %v", got)
	}
}

// TestOwnedOnEveryNode checks that Down's leftover killing takes the
// containers and shims of every node, and nothing else.
func TestOwnedOnEveryNode(t *testing.T) {
	cfg := multiNodeConfig()
	cfg.ComponentsDir = "/c"
	shim, _ := BinaryPath(cfg, "containerd-shim-runc-v2")
	roots := []string{"/sys/fs/cgroup/drakit-kubelet", "/sys/fs/cgroup/drakit-kubelet-3"}
	for _, tc := range []struct {
		name string
		p    procInfo
		want bool
	}{
		{"container on node 3", procInfo{Exe: "/pause", Cgroups: []string{"/drakit-kubelet-3/kubepods/pod1/c"}}, true},
		{"container in node 2's root, not in the ledger", procInfo{Exe: "/pause", Cgroups: []string{"/drakit-kubelet-2/kubepods/pod1/c"}}, false},
		{"shim of node 4", procInfo{Exe: shim, Cmdline: []string{shim, "-address", "/r/nodes/4/containerd/containerd.sock"}}, true},
		{"shim of node 5 (no such node)", procInfo{Exe: shim, Cmdline: []string{shim, "-address", "/r/nodes/5/containerd/containerd.sock"}}, false},
	} {
		if got := owned(cfg, roots, tc.p); got != tc.want {
			t.Errorf("%s: owned = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodesRecord(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 3
	if got, err := withRecordedNodes(cfg); err != nil || got.Nodes != 3 {
		t.Fatalf("without a record: Nodes %d, err %v; want the configured 3", got.Nodes, err)
	}
	if err := ensureNodesRecord(cfg); err != nil {
		t.Fatal(err)
	}
	if err := ensureNodesRecord(cfg); err != nil {
		t.Errorf("same count again: %v", err)
	}
	one := cfg
	one.Nodes = 1
	if err := ensureNodesRecord(one); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "--nodes 3") {
		t.Errorf("up with 1 node over a 3-node run dir = %v, want ErrInvalidConfig naming --nodes 3", err)
	}
	if got, err := withRecordedNodes(one); err != nil || got.Nodes != 3 {
		t.Errorf("Down/Status config: Nodes %d, err %v; want the recorded 3", got.Nodes, err)
	}
}

// TestEnsurePKIForEveryNode checks that every node's kubelet gets its own
// identity system:node:<name> and a serving certificate for its address.
func TestEnsurePKIForEveryNode(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 2
	now := time.Now()
	if err := ensurePKI(cfg, now); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(pkiDir(cfg), caCert)))
	for _, n := range cfg.nodes() {
		serving := readCert(t, filepath.Join(pkiDir(cfg), kubeletServingCertFile(n)))
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: nodeName(n), CurrentTime: now}); err != nil {
			t.Errorf("node %s serving certificate: %v", nodeName(n), err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(pkiDir(cfg), kubeletKubeconfigFile(n)))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(rc.CertData)
		cert, _ := x509.ParseCertificate(block.Bytes)
		if cert.Subject.CommonName != "system:node:"+nodeName(n) || !cmp.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("node %s kubelet identity %s %v", nodeName(n), cert.Subject.CommonName, cert.Subject.Organization)
		}
	}
	second := readCert(t, filepath.Join(pkiDir(cfg), "kubelet-serving-2.crt"))
	if !second.IPAddresses[0].Equal(net.ParseIP("127.0.0.2")) {
		t.Errorf("node 2 serving certificate IPs %v", second.IPAddresses)
	}
}

// TestNodeLogs checks that a node's containerd and kubelet logs are read
// from its own dir, of the nodes Up recorded, and the control plane's from
// RunDir.
func TestNodeLogs(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 3
	if err := ensureNodesRecord(cfg); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{
		LogPath(cfg.node(2), Kubelet): "kubelet of node 2\n",
		LogPath(cfg, APIServer):       "apiserver\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	asked := cfg
	asked.Nodes = 1 // as `drakit env logs` without --nodes
	if got, err := NodeLogs(asked, 2, Kubelet, 0); err != nil || got != "kubelet of node 2\n" {
		t.Errorf("NodeLogs(2, kubelet) = %q, %v", got, err)
	}
	if got, err := NodeLogs(asked, 2, APIServer, 0); err != nil || got != "apiserver\n" {
		t.Errorf("NodeLogs(2, apiserver) = %q, %v; want the control plane's log", got, err)
	}
	if _, err := NodeLogs(asked, 4, Kubelet, 0); err == nil || !strings.Contains(err.Error(), "nodes 1..3") {
		t.Errorf("NodeLogs(4) of a 3-node cluster = %v", err)
	}
}
