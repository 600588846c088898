package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestKubeletConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	cfg.FeatureGates = "DRAConsumableCapacity=true,DRADeviceTaints=false"
	b, err := kubeletConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatalf("kubelet config is not YAML: %v\n%s", err, b)
	}
	want := map[string]any{
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               "/drakit-kubelet",
		"containerRuntimeEndpoint": "unix:///r/containerd/containerd.sock",
		"imageServiceEndpoint":     "unix:///r/containerd/containerd.sock",
		"address":                  "127.0.0.1",
		"healthzBindAddress":       "127.0.0.1",
		"port":                     float64(10250),
		"healthzPort":              float64(10248),
		"readOnlyPort":             float64(0),
		"resolvConf":               "",
		"podLogsDir":               "/r/kubelet/pod-logs",
		"volumePluginDir":          "/r/kubelet/volume-plugins",
		"authorization":            map[string]any{"mode": "Webhook"},
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": "/r/pki/ca.crt"},
		},
		"tlsCertFile":                 "/r/pki/kubelet-serving.crt",
		"featureGates":                map[string]any{"DRAConsumableCapacity": true, "DRADeviceTaints": false},
		"imageGCHighThresholdPercent": float64(100),
		"syncFrequency":               "5s",
	}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("kubelet config %s (-want +got):\n%s", k, diff)
		}
	}
}

func TestContainerdConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	got := containerdConfig(cfg, "drakit.dev/pause:dev")
	for _, want := range []string{
		`root = "/r/containerd/root"`,
		`state = "/r/containerd/state"`,
		`address = "/r/containerd/containerd.sock"`,
		`address = "/r/containerd/containerd.sock.ttrpc"`,
		`cdi_spec_dirs = ["/r/cdi"]`,
		`restrict_oom_score_adj = true`,
		`conf_dir = "/r/cni/net.d"`,
		`bin_dirs = ["/r/cni/bin"]`,
		`sandbox = "drakit.dev/pause:dev"`,
		`disable_tcp_service = true`,
		`stream_server_address = "127.0.0.1"`,
		"[plugins.'io.containerd.nri.v1.nri']\n    disable = true",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("containerd config lacks %q:\n%s", want, got)
		}
	}
}

// TestComponentArgsStayOnLoopback checks that every address a component
// binds or dials is on 127.0.0.1.
func TestComponentArgsStayOnLoopback(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	args := componentArgs(cfg)
	if len(args) != len(Components()) {
		t.Fatalf("componentArgs has %d components, want %d", len(args), len(Components()))
	}
	for name, argv := range args {
		for _, a := range argv {
			if strings.Contains(a, "=0.0.0.0") || strings.Contains(a, "//0.0.0.0") || strings.Contains(a, "localhost") {
				t.Errorf("%s: %s leaves 127.0.0.1", name, a)
			}
			if k, v, ok := strings.Cut(a, "="); ok && strings.Contains(k, "address") && v != "127.0.0.1" {
				t.Errorf("%s: %s", name, a)
			}
			if strings.Contains(a, "://") && !strings.Contains(a, "://127.0.0.1:") && !strings.Contains(a, "https://kubernetes.default.svc") {
				t.Errorf("%s: URL off loopback: %s", name, a)
			}
		}
	}
	for _, want := range []string{"--client-cert-auth=true", "--peer-client-cert-auth=true", "--trusted-ca-file=/r/pki/etcd-ca.crt",
		"--listen-client-urls=https://127.0.0.1:23790", "--listen-peer-urls=https://127.0.0.1:23800"} {
		if !contains(args[Etcd], want) {
			t.Errorf("etcd lacks %s: only the apiserver, with a client certificate of etcd's CA, may talk to it", want)
		}
	}
	for _, want := range []string{"--etcd-servers=https://127.0.0.1:23790", "--etcd-certfile=/r/pki/apiserver-etcd-client.crt",
		"--kubelet-certificate-authority=/r/pki/ca.crt"} {
		if !contains(args[APIServer], want) {
			t.Errorf("apiserver lacks %s", want)
		}
	}
	if !contains(args[APIServer], "--endpoint-reconciler-type=none") || !contains(args[Kubelet], "--hostname-override=127.0.0.1") {
		t.Error("apiserver needs --endpoint-reconciler-type=none and the kubelet --hostname-override=127.0.0.1 (§15, §18.3)")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestKubeletWrapperHidesSysctls runs the kubelet wrapper for real: inside it
// the kubelet's sysctls read the values it wants, while the host's stay as
// they were.
func TestKubeletWrapperHidesSysctls(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the wrapper creates a mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not installed: run scripts/install-deps.sh")
	}
	cfg := testConfig(t)
	if err := writeSysctlFiles(cfg); err != nil {
		t.Fatal(err)
	}
	var hostBefore, paths []string
	for _, s := range sysctls {
		paths = append(paths, "/proc/sys/"+s.key)
		b, _ := os.ReadFile("/proc/sys/" + s.key)
		hostBefore = append(hostBefore, strings.TrimSpace(string(b)))
	}
	out, err := exec.Command("unshare", append([]string{"--mount", "--propagation", "unchanged", "sh", "-c", kubeletWrapper(),
		"drakit-kubelet", sysctlDir(cfg), "cat"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("wrapper: %v: %s", err, out)
	}
	var inside []string
	for _, s := range sysctls {
		inside = append(inside, s.value)
	}
	if diff := cmp.Diff(inside, strings.Fields(string(out))); diff != "" {
		t.Errorf("sysctls inside the wrapper (-want +got):\n%s", diff)
	}
	var hostAfter []string
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		hostAfter = append(hostAfter, strings.TrimSpace(string(b)))
	}
	if diff := cmp.Diff(hostBefore, hostAfter); diff != "" {
		t.Errorf("host sysctls changed (-before +after):\n%s", diff)
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, "/proc/sys/") || strings.HasPrefix(m.MountPoint, filepath.Clean(cfg.RunDir)) {
			t.Errorf("the wrapper's mount %s leaked into the host namespace", m.MountPoint)
		}
	}
}

func TestSchedulerConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		gates       string
		wantProfile bool
	}{
		"every gate on":                    {gates: DefaultFeatureGates, wantProfile: true},
		"no gates set":                     {gates: "", wantProfile: true},
		"binding conditions off":           {gates: "DRADeviceBindingConditions=false", wantProfile: false},
		"claim device status off":          {gates: "DRAResourceClaimDeviceStatus=false,DRADeviceBindingConditions=true", wantProfile: false},
		"binding conditions explicitly on": {gates: "DRADeviceBindingConditions=true,DRAResourceClaimDeviceStatus=true", wantProfile: true},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RunDir = "/r"
			cfg.FeatureGates = tc.gates
			b, err := schedulerConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal(b, &got); err != nil {
				t.Fatalf("scheduler config is not YAML: %v\n%s", err, b)
			}
			want := map[string]any{
				"apiVersion":       "kubescheduler.config.k8s.io/v1",
				"kind":             "KubeSchedulerConfiguration",
				"clientConnection": map[string]any{"kubeconfig": "/r/pki/scheduler.kubeconfig"},
				"leaderElection":   map[string]any{"leaderElect": false},
			}
			if tc.wantProfile {
				want["profiles"] = []any{map[string]any{
					"schedulerName": "default-scheduler",
					"pluginConfig": []any{map[string]any{
						"name": "DynamicResources",
						"args": map[string]any{"bindingTimeout": "30s"},
					}},
				}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scheduler config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSchedulerArgsUseTheConfigFile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir = "/r"
	args := componentArgs(cfg)[Scheduler]
	if !slices.Contains(args, "--config=/r/scheduler/config.yaml") {
		t.Errorf("scheduler args %q lack --config=/r/scheduler/config.yaml", args)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--kubeconfig=") {
			t.Errorf("scheduler args %q set %s, which kube-scheduler ignores next to --config", args, a)
		}
	}
}
