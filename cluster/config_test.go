package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigPaths(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"RunDir", cfg.RunDir, "/home/u/.local/state/drakit/cluster"},
		{"ComponentsDir", cfg.ComponentsDir, "/home/u/.cache/drakit/components"},
		{"ImagesDir", cfg.ImagesDir, "/home/u/.cache/drakit/images"},
		{"KubeconfigPath", KubeconfigPath(cfg), "/home/u/.local/state/drakit/cluster/kubeconfig"},
		{"CDIDir", CDIDir(cfg), "/home/u/.local/state/drakit/cluster/cdi"},
		{"KubeletRootBase", cfg.KubeletRootBase, "/run/drakit"},
		{"KubeletRootDir", KubeletRootDir(cfg), "/run/drakit/k1"},
		{"kubeletRootStore", kubeletRootStore(cfg), "/home/u/.local/state/drakit/cluster/kubelet/root"},
		{"EmulatorRoot", EmulatorRoot(cfg), "/home/u/.local/state/drakit/cluster/emulator"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}

	// Per-pod DRA sockets fit real driver names (compute-domain.nvidia.com,
	// strict-config.plain.drakit.dev) on every node.
	if got := MaxDriverName(KubeletRootDir(cfg.node(MaxNodes))); got != 37 {
		t.Errorf("MaxDriverName of node %d = %d, want 37", MaxNodes, got)
	}

	t.Setenv("XDG_STATE_HOME", "/s")
	t.Setenv("XDG_CACHE_HOME", "/c")
	cfg = DefaultConfig()
	if cfg.RunDir != "/s/drakit/cluster" || cfg.ComponentsDir != "/c/drakit/components" {
		t.Errorf("with XDG dirs: RunDir %q, ComponentsDir %q", cfg.RunDir, cfg.ComponentsDir)
	}
	bin, err := BinaryPath(cfg, "kubectl")
	if err != nil || bin != "/c/drakit/components/kubernetes-v1.37.2/bin/kubectl" {
		t.Errorf("BinaryPath(kubectl) = %q, %v", bin, err)
	}
	if _, err := BinaryPath(cfg, "docker"); err == nil {
		t.Error("BinaryPath(docker): no error")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		field  string // "" = valid
	}{
		{"default", func(*Config) {}, ""},
		{"relative run dir", func(c *Config) { c.RunDir = "state/cluster" }, "RunDir"},
		{"unclean run dir", func(c *Config) { c.RunDir = "/tmp/x/../y" }, "RunDir"},
		{"root run dir", func(c *Config) { c.RunDir = "/" }, "RunDir"},
		{"run dir too long for sockets", func(c *Config) { c.RunDir = "/tmp/" + strings.Repeat("d", 70) }, "RunDir"},
		{"long run dir in a home directory", func(c *Config) { c.RunDir = "/home/a-long-user-name/.local/state/drakit/cluster" }, ""},
		{"relative kubelet root base", func(c *Config) { c.KubeletRootBase = "run/drakit" }, "KubeletRootBase"},
		{"kubelet root base too long", func(c *Config) { c.KubeletRootBase = "/run/" + strings.Repeat("d", 13) }, "KubeletRootBase"},
		{"kubelet root base in the run dir", func(c *Config) { c.KubeletRootBase = c.RunDir + "/k" }, "KubeletRootBase"},
		{"run dir in the kubelet root base", func(c *Config) { c.KubeletRootBase = "/tmp/drakit" }, "KubeletRootBase"},
		{"run dir holds the cache", func(c *Config) { c.ComponentsDir = c.RunDir + "/components" }, "RunDir"},
		{"control character", func(c *Config) { c.ImagesDir = "/tmp/a\nb" }, "ImagesDir"},
		{"relative components dir", func(c *Config) { c.ComponentsDir = "c" }, "ComponentsDir"},
		{"bad version", func(c *Config) { c.EtcdVersion = "3.7.0" }, "EtcdVersion"},
		{"hostname node", func(c *Config) { c.NodeName = "node1" }, "NodeName"},
		{"non-loopback node", func(c *Config) { c.NodeName = "10.1.2.3" }, "NodeName"},
		{"other loopback node", func(c *Config) { c.NodeName = "127.0.0.2" }, ""},
		{"bad service cidr", func(c *Config) { c.ServiceCIDR = "10.0.0.0" }, "ServiceCIDR"},
		{"ipv6 service cidr", func(c *Config) { c.ServiceCIDR = "fd00::/108" }, "ServiceCIDR"},
		{"unmasked service cidr", func(c *Config) { c.ServiceCIDR = "10.0.0.5/24" }, "ServiceCIDR"},
		{"nested cgroup root", func(c *Config) { c.CgroupRoot = "/a/b" }, "CgroupRoot"},
		{"root cgroup", func(c *Config) { c.CgroupRoot = "/" }, "CgroupRoot"},
		{"port zero", func(c *Config) { c.KubeletPort = 0 }, "KubeletPort"},
		{"port too big", func(c *Config) { c.SchedulerPort = 70000 }, "SchedulerPort"},
		{"duplicate port", func(c *Config) { c.KubeletHealthzPort = c.APIServerPort }, "KubeletHealthzPort"},
		{"gate without value", func(c *Config) { c.FeatureGates = "DRAConsumableCapacity" }, "FeatureGates"},
		{"gate not boolean", func(c *Config) { c.FeatureGates = "A=yes" }, "FeatureGates"},
		{"gate twice", func(c *Config) { c.FeatureGates = "A=true,A=false" }, "FeatureGates"},
		{"no gates", func(c *Config) { c.FeatureGates = "" }, ""},
		{"bad runtime config", func(c *Config) { c.RuntimeConfig = "resource.k8s.io=true" }, "RuntimeConfig"},
		{"runtime config not boolean", func(c *Config) { c.RuntimeConfig = "resource.k8s.io/v1=on" }, "RuntimeConfig"},
		{"verbosity", func(c *Config) { c.Verbosity = 11 }, "Verbosity"},
		{"start timeout", func(c *Config) { c.StartTimeout = 0 }, "StartTimeout"},
		{"stop timeout", func(c *Config) { c.StopTimeout = -time.Second }, "StopTimeout"},
		{"pod delete timeout", func(c *Config) { c.PodDeleteTimeout = 0 }, "PodDeleteTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RunDir = "/tmp/drakit/cluster"
			cfg.ComponentsDir = "/tmp/cache/components"
			cfg.ImagesDir = "/tmp/cache/images"
			tc.modify(&cfg)
			err := cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), ": "+tc.field+": ") {
				t.Errorf("Validate() = %q, want it to name field %s", err, tc.field)
			}
		})
	}
}

// TestValidateSocketErrors checks that a path too long for its sockets is
// refused with the field, the socket path, its length and by how much it is
// too long.
func TestValidateSocketErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RunDir, cfg.ComponentsDir, cfg.ImagesDir = "/tmp/drakit/cluster", "/tmp/cache/components", "/tmp/cache/images"
	cfg.KubeletRootBase = "/run/kubelet-roots-of-drakit"
	sock := "/run/kubelet-roots-of-drakit/k1/plugins/" + strings.Repeat("d", DriverNameReserve) + "/dra-" + podUIDPlaceholder + ".sock"
	want := fmt.Sprintf(`KubeletRootBase: "/run/kubelet-roots-of-drakit" is 11 bytes too long: node 1's per-pod DRA socket for a 32-byte driver name, %s, is 118 bytes, over the 107-byte unix socket limit`, sock)
	if err := cfg.Validate(); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Validate = %v, want it to end with %q", err, want)
	}
	if len(sock) != 118 || MaxDriverName("/run/kubelet-roots-of-drakit/k1") != DriverNameReserve-11 {
		t.Errorf("socket %s is %d bytes, MaxDriverName %d", sock, len(sock), MaxDriverName("/run/kubelet-roots-of-drakit/k1"))
	}

	cfg = DefaultConfig()
	cfg.RunDir, cfg.Nodes = "/tmp/"+strings.Repeat("r", 61), 16
	sock = cfg.RunDir + "/nodes/16/containerd/containerd.sock.ttrpc"
	want = fmt.Sprintf(`RunDir: %q is 1 bytes too long: node 16's containerd socket %s is 108 bytes, over the 107-byte unix socket limit`, cfg.RunDir, sock)
	if err := cfg.Validate(); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Validate = %v, want it to end with %q", err, want)
	}
}

func TestParseFeatureGatesDefault(t *testing.T) {
	gates, err := parseFeatureGates(DefaultFeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	// Every gate of local-cluster.md §9.1, enabled; GenericWorkload needs
	// scheduling.k8s.io/v1beta1 in the runtime config.
	if len(gates) != 17 {
		t.Errorf("DefaultFeatureGates has %d gates, want the 17 of §9.1", len(gates))
	}
	for name, on := range gates {
		if !on {
			t.Errorf("gate %s is off", name)
		}
	}
	if !gates["GenericWorkload"] || !strings.Contains(DefaultRuntimeConfig, "scheduling.k8s.io/v1beta1=true") {
		t.Error("GenericWorkload without scheduling.k8s.io/v1beta1 stops the scheduler from becoming ready")
	}
}
