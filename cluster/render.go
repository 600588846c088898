package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// sysctls are the kernel settings the kubelet's setupKernelTunables wants.
// The kubelet sees them through files bind-mounted over /proc/sys in its own
// mount namespace; the host's values are never written (§11.2).
var sysctls = []struct{ key, value string }{
	{"vm/overcommit_memory", "1"},
	{"vm/panic_on_oom", "0"},
	{"kernel/panic", "10"},
	{"kernel/panic_on_oops", "1"},
}

// kubeletWrapper returns the script run inside `unshare -m --propagation
// unchanged`: it makes /proc private in the new mount namespace (so nothing
// mounted on it reaches the host, even where /proc is a shared mount),
// bind-mounts the sysctl files of the directory $1 over /proc/sys and execs
// the kubelet ($2...), which keeps the PID. Every other mount keeps the
// host's propagation, so the volumes the kubelet mounts under its (shared)
// root dir are seen by containerd in the host namespace.
func kubeletWrapper() string {
	var b strings.Builder
	b.WriteString("set -e\nmount --make-rprivate /proc\n")
	for _, s := range sysctls {
		fmt.Fprintf(&b, "mount --bind \"$1/%s\" /proc/sys/%s\n", sysctlFileName(s.key), s.key)
	}
	b.WriteString("shift\nexec \"$@\"\n")
	return b.String()
}

// sysctlFileName is the file under sysctlDir holding a sysctl's value.
func sysctlFileName(key string) string { return strings.ReplaceAll(key, "/", "_") }

func pki(cfg Config, name string) string { return filepath.Join(pkiDir(cfg), name) }

func (c Config) v() string { return "--v=" + strconv.Itoa(c.Verbosity) }

// componentArgs returns the argv (without the binary) of every component.
func componentArgs(cfg Config) map[string][]string {
	port := strconv.Itoa
	client := "https://127.0.0.1:" + port(cfg.EtcdClientPort)
	peer := "https://127.0.0.1:" + port(cfg.EtcdPeerPort)
	kcm := pki(cfg, kcmKubeconfig)
	sched := pki(cfg, schedulerKubeconfig)
	return map[string][]string{
		Etcd: {
			"--name=drakit", "--data-dir=" + etcdDataDir(cfg),
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=drakit=" + peer,
			// TLS with client certificates of etcd's own CA on the client and
			// peer ports: the apiserver is the only client.
			"--cert-file=" + pki(cfg, etcdServerCert), "--key-file=" + pki(cfg, etcdServerKey),
			"--client-cert-auth=true", "--trusted-ca-file=" + pki(cfg, etcdCACert),
			"--peer-cert-file=" + pki(cfg, etcdPeerCert), "--peer-key-file=" + pki(cfg, etcdPeerKey),
			"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + pki(cfg, etcdCACert),
			// Plain HTTP serves only /metrics and /health (as in kubeadm).
			"--listen-metrics-urls=http://127.0.0.1:" + port(cfg.EtcdMetricsPort),
			"--quota-backend-bytes=1073741824",
		},
		APIServer: {
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + port(cfg.APIServerPort),
			"--etcd-servers=" + client,
			"--etcd-cafile=" + pki(cfg, etcdCACert),
			"--etcd-certfile=" + pki(cfg, etcdClientCert), "--etcd-keyfile=" + pki(cfg, etcdClientKey),
			"--client-ca-file=" + pki(cfg, caCert),
			"--tls-cert-file=" + pki(cfg, apiServerCert), "--tls-private-key-file=" + pki(cfg, apiServerKey),
			"--kubelet-client-certificate=" + pki(cfg, kubeletClientCert), "--kubelet-client-key=" + pki(cfg, kubeletClientKey),
			"--kubelet-certificate-authority=" + pki(cfg, caCert),
			"--requestheader-client-ca-file=" + pki(cfg, frontProxyCACert),
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + pki(cfg, saPub), "--service-account-signing-key-file=" + pki(cfg, saKey),
			"--service-cluster-ip-range=" + cfg.ServiceCIDR,
			"--authorization-mode=Node,RBAC", "--allow-privileged=true",
			"--endpoint-reconciler-type=none",
			"--feature-gates=" + cfg.FeatureGates, "--runtime-config=" + cfg.RuntimeConfig,
			cfg.v(),
		},
		ControllerManager: {
			"--kubeconfig=" + kcm, "--authentication-kubeconfig=" + kcm, "--authorization-kubeconfig=" + kcm,
			"--bind-address=127.0.0.1", "--secure-port=" + port(cfg.ControllerManagerPort),
			"--service-account-private-key-file=" + pki(cfg, saKey), "--root-ca-file=" + pki(cfg, caCert),
			"--use-service-account-credentials=true", "--leader-elect=false", "--controllers=*",
			// Its default client limit (20 QPS) makes starting its ~40 controllers,
			// each with a ServiceAccount token of its own, take seconds.
			"--kube-api-qps=200", "--kube-api-burst=400",
			// Its default, /usr/libexec/kubernetes/..., would be created on the host.
			"--flex-volume-plugin-dir=" + filepath.Join(cfg.RunDir, "controller-manager", "volume-plugins"),
			"--feature-gates=" + cfg.FeatureGates, cfg.v(),
		},
		Scheduler: {
			// Its kubeconfig is in its config file: with --config, kube-scheduler
			// ignores --kubeconfig.
			"--config=" + schedulerConfigPath(cfg), "--authentication-kubeconfig=" + sched, "--authorization-kubeconfig=" + sched,
			"--bind-address=127.0.0.1", "--secure-port=" + port(cfg.SchedulerPort), "--leader-elect=false",
			"--feature-gates=" + cfg.FeatureGates, cfg.v(),
		},
		Containerd: {"--config=" + containerdConfigPath(cfg)},
		Kubelet: {
			"--config=" + kubeletConfigPath(cfg), "--kubeconfig=" + pki(cfg, kubeletKubeconfigFile(cfg)),
			"--root-dir=" + KubeletRootDir(cfg), "--cert-dir=" + filepath.Join(kubeletDir(cfg), "pki"),
			"--hostname-override=" + nodeName(cfg), cfg.v(),
		},
	}
}

func containerdConfigPath(cfg Config) string { return filepath.Join(containerdDir(cfg), "config.toml") }
func kubeletConfigPath(cfg Config) string    { return filepath.Join(kubeletDir(cfg), "config.yaml") }
func cniConfPath(cfg Config) string {
	return filepath.Join(cniConfDir(cfg), "10-hostnet-only.conflist")
}

// tomlString quotes s as a TOML basic string (paths never hold control
// characters: Config.Validate rejects them).
func tomlString(s string) string { return strconv.Quote(s) }

// containerdConfig renders containerd's config.toml (§7.1 + §18.2): private
// root, state and sockets, CDI specs from CDIDir, oom_score_adj restricted
// (hosts without CAP_SYS_RESOURCE), the local pause image as sandbox image, a
// loopback-only CNI configuration in a private dir with no plugin binaries,
// the MIG manager runtime handler (MIGManagerRuntimeClass), NRI with only the
// emulator's plugin (nriConfig), and the CRI stream server on 127.0.0.1 only.
func containerdConfig(cfg Config, sandboxImage string) string {
	dir := containerdDir(cfg)
	q := tomlString
	return fmt.Sprintf(`version = 3
root = %s
state = %s

[grpc]
  address = %s

[ttrpc]
  address = %s

[debug]
  address = %s

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    cdi_spec_dirs = [%s]
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      conf_dir = %s
      bin_dirs = [%s]
%s  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %s
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
%s`,
		q(filepath.Join(dir, "root")), q(filepath.Join(dir, "state")),
		q(ContainerdSocket(cfg)), q(ContainerdSocket(cfg)+".ttrpc"), q(filepath.Join(dir, "debug.sock")),
		q(CDIDir(cfg)), q(cniConfDir(cfg)), q(cniBinDir(cfg)), migManagerRuntimeConfig(cfg), q(sandboxImage), nriConfig(cfg))
}

// cniConfig is the loopback-only CNI configuration: with it the CRI reports
// NetworkReady and the Node becomes Ready; hostNetwork sandboxes never run
// CNI, and a non-hostNetwork pod fails safely because no plugin binary exists.
const cniConfig = `{"cniVersion":"1.0.0","name":"hostnet-only","plugins":[{"type":"loopback"}]}` + "\n"

func schedulerConfigPath(cfg Config) string {
	return filepath.Join(cfg.RunDir, "scheduler", "config.yaml")
}

// SchedulerBindingTimeout is how long the scheduler of a local cluster waits
// in PreBind for the binding conditions of a device (KEP-5007) before it
// gives up with "device binding timeout": DynamicResourcesArgs.bindingTimeout,
// whose default of 10 minutes no conformance run can wait out.
const SchedulerBindingTimeout = 30 * time.Second

// schedulerConfig renders the KubeSchedulerConfiguration: the scheduler's
// kubeconfig, no leader election, and the DynamicResources plugin's
// bindingTimeout (SchedulerBindingTimeout), which kube-scheduler rejects
// when DRADeviceBindingConditions or DRAResourceClaimDeviceStatus is off, so
// it is left out then.
func schedulerConfig(cfg Config) ([]byte, error) {
	gates, err := parseFeatureGates(cfg.FeatureGates)
	if err != nil {
		return nil, err
	}
	conf := map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{"kubeconfig": pki(cfg, schedulerKubeconfig)},
		"leaderElection":   map[string]any{"leaderElect": false},
	}
	if on(gates, "DRADeviceBindingConditions") && on(gates, "DRAResourceClaimDeviceStatus") {
		conf["profiles"] = []any{map[string]any{
			"schedulerName": "default-scheduler",
			"pluginConfig": []any{map[string]any{
				"name": "DynamicResources",
				"args": map[string]any{"bindingTimeout": SchedulerBindingTimeout.String()},
			}},
		}}
	}
	return yaml.Marshal(conf)
}

// on reports whether a gate that is on by default in v1.37.2 is on: unless
// the gates turn it off.
func on(gates map[string]bool, gate string) bool {
	v, set := gates[gate]
	return !set || v
}

// kubeletConfig renders the KubeletConfiguration of §18.3 with every feature
// gate of cfg.FeatureGates, x509 and webhook authentication with Webhook
// authorization (§8's, instead of §18.3's anonymous AlwaysAllow), plus
// settings for a registry-less test node: volumePluginDir under RunDir
// (instead of /usr/libexec/kubernetes), image garbage collection off
// (imported images cannot be pulled again), hard eviction thresholds low
// enough that a fairly full disk does not evict the kit's pods or taint the
// Node, and a 5 s syncFrequency: the kubelet retries a pod whose DRA
// prepare failed only at its next resync (1 to 1.5 minutes by default), and
// a prepare fails whenever the kubelet sees a newly bound pod before the node
// authorizer lets it read the pod's claims (seen under load: "no
// relationship found between node").
func kubeletConfig(cfg Config) ([]byte, error) {
	gates, err := parseFeatureGates(cfg.FeatureGates)
	if err != nil {
		return nil, err
	}
	endpoint := "unix://" + ContainerdSocket(cfg)
	return yaml.Marshal(map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"failSwapOn":               false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               cgroupRoot(cfg),
		"containerRuntimeEndpoint": endpoint,
		"imageServiceEndpoint":     endpoint,
		"podLogsDir":               filepath.Join(kubeletDir(cfg), "pod-logs"),
		"volumePluginDir":          filepath.Join(kubeletDir(cfg), "volume-plugins"),
		"resolvConf":               "",
		"address":                  nodeName(cfg),
		"port":                     cfg.KubeletPort,
		"readOnlyPort":             0,
		"healthzBindAddress":       nodeName(cfg),
		"healthzPort":              cfg.KubeletHealthzPort,
		// As in a kubeadm node: client certificates of the cluster CA or
		// bearer tokens checked by the apiserver (TokenReview), every
		// request authorized by it (SubjectAccessReview), anonymous off;
		// served with a certificate of the cluster CA.
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": pki(cfg, caCert)},
		},
		"authorization":               map[string]any{"mode": "Webhook"},
		"tlsCertFile":                 pki(cfg, kubeletServingCertFile(cfg)),
		"tlsPrivateKeyFile":           pki(cfg, kubeletServingKeyFile(cfg)),
		"featureGates":                gates,
		"syncFrequency":               "5s",
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
			"imagefs.available": "1%", "imagefs.inodesFree": "1%",
		},
	})
}
