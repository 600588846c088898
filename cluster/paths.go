package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Component names, in start order.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Containerd        = "containerd"
	Kubelet           = "kubelet"
)

// Components returns the component names in start order.
func Components() []string {
	return []string{Etcd, APIServer, ControllerManager, Scheduler, Containerd, Kubelet}
}

// KubeconfigPath is the admin kubeconfig (O=system:masters) Up writes.
func KubeconfigPath(cfg Config) string { return filepath.Join(cfg.RunDir, "kubeconfig") }

// CDIDir is the directory node 1's containerd reads CDI specs from
// (cdi_spec_dirs); a DRA driver writes its specs there. NodePaths has every
// node's.
func CDIDir(cfg Config) string { return filepath.Join(nodeDir(cfg), "cdi") }

// KubeletRootDir is node 1's kubelet --root-dir: <KubeletRootBase>/k1, where
// Up bind-mounts its store in RunDir (<RunDir>/kubelet/root). DRA kubelet
// plugins put their sockets under <root>/plugins/<driver>/ and register in
// <root>/plugins_registry/; the short path leaves room for the driver's name
// (MaxDriverName). NodePaths has every node's.
func KubeletRootDir(cfg Config) string {
	return filepath.Join(cfg.KubeletRootBase, "k"+strconv.Itoa(cfg.index()))
}

// kubeletRootStore is the directory in RunDir that Up mounts at a node's
// KubeletRootDir: pod volumes and plugin data stay on RunDir's file system
// (KubeletRootBase is usually a tmpfs) and go with it on Down.
func kubeletRootStore(cfg Config) string { return filepath.Join(kubeletDir(cfg), "root") }

// podUIDPlaceholder stands for a pod UID (36 bytes, as every UID the API
// server assigns) in socket paths whose length is checked.
const podUIDPlaceholder = "00000000-0000-0000-0000-000000000000"

// PerPodDRASocket is the DRA socket that a driver with per-pod socket names
// (kubeletplugin.RollingUpdate, so that two pods of its DaemonSet can serve
// at once during a rolling update) creates under a kubelet root dir:
// <root>/plugins/<driver>/dra-<pod UID>.sock. It is the longest socket a
// kubelet plugin makes there: its registration socket
// <root>/plugins_registry/<driver>-<pod UID>-reg.sock falls back to shorter,
// hashed names when it is too long, the DRA socket has no such fallback.
func PerPodDRASocket(kubeletRootDir, driver, podUID string) string {
	return kubeletRootDir + "/plugins/" + driver + "/dra-" + podUID + ".sock"
}

// MaxDriverName is the longest driver name (bytes) whose per-pod DRA socket
// under kubeletRootDir fits the unix socket limit; it is negative when
// none fits.
func MaxDriverName(kubeletRootDir string) int {
	return maxSocketPath - len(PerPodDRASocket(kubeletRootDir, "", podUIDPlaceholder))
}

// EmulatorRoot is where `drakit emulator render` writes node 1's emulated
// hardware; the cluster only provides the path (and removes it on Down).
// NodePaths has every node's.
func EmulatorRoot(cfg Config) string { return filepath.Join(nodeDir(cfg), "emulator") }

// ContainerdSocket is node 1's containerd gRPC socket (also its kubelet's
// CRI endpoint). NodePaths has every node's.
func ContainerdSocket(cfg Config) string {
	return filepath.Join(nodeDir(cfg), "containerd", "containerd.sock")
}

// APIServerURL is the apiserver's address, always on 127.0.0.1.
func APIServerURL(cfg Config) string { return "https://127.0.0.1:" + strconv.Itoa(cfg.APIServerPort) }

// LogPath is the log file of a component; containerd's and the kubelet's
// are node 1's (a node's are in <Node.Dir>/logs).
func LogPath(cfg Config, component string) string {
	return filepath.Join(logDir(cfg), component+".log")
}

// BinaryPath returns the path of a built binary by name: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kubectl, etcd,
// containerd, ctr, containerd-shim-runc-v2 or crictl.
func BinaryPath(cfg Config, binary string) (string, error) {
	dir, ok := map[string]string{
		"kube-apiserver":          "kubernetes-" + cfg.KubernetesVersion,
		"kube-controller-manager": "kubernetes-" + cfg.KubernetesVersion,
		"kube-scheduler":          "kubernetes-" + cfg.KubernetesVersion,
		"kubelet":                 "kubernetes-" + cfg.KubernetesVersion,
		"kubectl":                 "kubernetes-" + cfg.KubernetesVersion,
		"etcd":                    "etcd-" + cfg.EtcdVersion,
		"containerd":              "containerd-" + cfg.ContainerdVersion,
		"ctr":                     "containerd-" + cfg.ContainerdVersion,
		"containerd-shim-runc-v2": "containerd-" + cfg.ContainerdVersion,
		"crictl":                  "crictl-" + cfg.CrictlVersion,
	}[binary]
	if !ok {
		return "", fmt.Errorf("binary %q is not one of the cluster's components", binary)
	}
	return filepath.Join(cfg.ComponentsDir, dir, "bin", binary), nil
}

// Paths below RunDir that only this package uses: the cluster's, and those
// of a node (below nodeDir; the control plane's logs and PID files are in
// node 1's, RunDir).
func pkiDir(cfg Config) string            { return filepath.Join(cfg.RunDir, "pki") }
func etcdDataDir(cfg Config) string       { return filepath.Join(cfg.RunDir, "etcd") }
func ledgerPath(cfg Config) string        { return filepath.Join(cfg.RunDir, "host-paths.json") }
func pidDir(cfg Config) string            { return filepath.Join(nodeDir(cfg), "pids") }
func logDir(cfg Config) string            { return filepath.Join(nodeDir(cfg), "logs") }
func containerdDir(cfg Config) string     { return filepath.Join(nodeDir(cfg), "containerd") }
func kubeletDir(cfg Config) string        { return filepath.Join(nodeDir(cfg), "kubelet") }
func sysctlDir(cfg Config) string         { return filepath.Join(nodeDir(cfg), "kubelet", "sysctl") }
func cniConfDir(cfg Config) string        { return filepath.Join(nodeDir(cfg), "cni", "net.d") }
func cniBinDir(cfg Config) string         { return filepath.Join(nodeDir(cfg), "cni", "bin") }
func pidPath(cfg Config, c string) string { return filepath.Join(pidDir(cfg), c+".pid") }
