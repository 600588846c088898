package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cluster"
)

// ProfileFlagUsage is the usage of a flag naming a node profile.
const ProfileFlagUsage = "node profile: a built-in name (see 'drakit emulator profiles') or a YAML file (a path containing / or ending in .yaml)"

// ClusterProfileFlagUsage is the usage of a flag naming a cluster profile.
const ClusterProfileFlagUsage = "cluster profile: a built-in name (see 'drakit emulator cluster-profile list') or a YAML file (a path containing / or ending in .yaml)"

// EnvOr returns the environment variable's value, or def when it is unset.
func EnvOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// BindClusterFlags maps every field of the local cluster's cluster.Config
// onto a flag: drakit env's and drakit images import's.
func BindClusterFlags(fs *pflag.FlagSet, cfg *cluster.Config) {
	fs.StringVar(&cfg.RunDir, "run-dir", cfg.RunDir, "all cluster state: PKI, etcd data, containerd, kubelet root, logs, CDI dir, emulator root (removed by down)")
	fs.StringVar(&cfg.ComponentsDir, "components-dir", cfg.ComponentsDir, "built components, <name>-<version>/bin each (scripts/build-components.sh)")
	fs.StringVar(&cfg.ImagesDir, "images-dir", cfg.ImagesDir, "docker-archive images imported on up (the pause image is built here when missing)")
	fs.StringVar(&cfg.KubernetesVersion, "kubernetes-version", cfg.KubernetesVersion, "Kubernetes component version")
	fs.StringVar(&cfg.EtcdVersion, "etcd-version", cfg.EtcdVersion, "etcd version")
	fs.StringVar(&cfg.ContainerdVersion, "containerd-version", cfg.ContainerdVersion, "containerd version")
	fs.StringVar(&cfg.CrictlVersion, "crictl-version", cfg.CrictlVersion, "crictl version")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "node 1's name: an IPv4 literal in 127.0.0.0/8; node i is named this address plus i-1")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, fmt.Sprintf("number of nodes (1..%d), each a kubelet with its own containerd; up only (without it, up keeps a running cluster's): down, status and logs act on the nodes up started", cluster.MaxNodes))
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", cfg.ServiceCIDR, "service cluster IP range (required by the apiserver; never routed)")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", cfg.CgroupRoot, "node 1's kubelet top-level cgroup (node i: <cgroup-root>-<i>), created by up and removed by down")
	fs.StringVar(&cfg.KubeletRootBase, "kubelet-root-base", cfg.KubeletRootBase, fmt.Sprintf("where up mounts node i's kubelet root dir, at k<i>: short, so that DRA drivers' per-pod sockets fit for driver names of %d bytes and more", cluster.DriverNameReserve))
	fs.IntVar(&cfg.APIServerPort, "apiserver-port", cfg.APIServerPort, "kube-apiserver secure port")
	fs.IntVar(&cfg.EtcdClientPort, "etcd-client-port", cfg.EtcdClientPort, "etcd client port")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", cfg.EtcdPeerPort, "etcd peer port")
	fs.IntVar(&cfg.EtcdMetricsPort, "etcd-metrics-port", cfg.EtcdMetricsPort, "etcd metrics port")
	fs.IntVar(&cfg.ControllerManagerPort, "controller-manager-port", cfg.ControllerManagerPort, "kube-controller-manager secure port")
	fs.IntVar(&cfg.SchedulerPort, "scheduler-port", cfg.SchedulerPort, "kube-scheduler secure port")
	fs.IntVar(&cfg.KubeletPort, "kubelet-port", cfg.KubeletPort, "kubelet port")
	fs.IntVar(&cfg.KubeletHealthzPort, "kubelet-healthz-port", cfg.KubeletHealthzPort, "kubelet healthz port")
	fs.StringVar(&cfg.FeatureGates, "feature-gates", cfg.FeatureGates, "feature gates of every component (Name=bool,...)")
	fs.StringVar(&cfg.RuntimeConfig, "runtime-config", cfg.RuntimeConfig, "apiserver --runtime-config (group/version=bool,...)")
	fs.IntVar(&cfg.Verbosity, "component-verbosity", cfg.Verbosity, "--v of every component")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "how long up waits for each component and for the Node")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "how long down waits after SIGTERM before SIGKILL")
	fs.DurationVar(&cfg.PodDeleteTimeout, "pod-delete-timeout", cfg.PodDeleteTimeout, "how long down waits for pods to terminate before forcing")
	if cfg.EmulatorNRIPlugin == "" {
		// This drakit: containerd runs its `emulator nri-plugin`.
		if exe, err := os.Executable(); err == nil {
			cfg.EmulatorNRIPlugin = exe
		}
	}
	fs.StringVar(&cfg.EmulatorNRIPlugin, "emulator-nri-plugin", cfg.EmulatorNRIPlugin,
		"the drakit executable whose 'emulator nri-plugin' every node's containerd runs, so that a container given an emulated GPU gets NVML whatever the driver's CDI edits hold (empty: NRI off)")
}
