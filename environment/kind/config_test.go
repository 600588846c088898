package kind

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	sigsyaml "sigs.k8s.io/yaml"

	"drakit.dev/drakit/emulator/clusterprofile"
	kindconfig "drakit.dev/drakit/kind"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenConfigOptions are the kit's additions each valid-<name>.yaml is
// generated with; testdata/config/valid-<name>.golden is the result.
var goldenConfigOptions = map[string]ConfigOptions{
	"repo":        {ClusterName: "drakit", NodeImage: "drakit.dev/kind-node:v1.37.2", Workers: 2, StateDir: "/run/drakit-kind", Offline: true},
	"no-worker":   {ClusterName: "dev", Workers: 1, StateDir: "/var/tmp/kind"},
	"empty-nodes": {ClusterName: "solo", NodeImage: "node:x", Workers: -1},
}

func TestGenerateGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/config/valid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != len(goldenConfigOptions) {
		t.Fatalf("%d valid-*.yaml files, %d golden option sets: each input needs one", len(inputs), len(goldenConfigOptions))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(in), "valid-"), ".yaml")
		t.Run(name, func(t *testing.T) {
			opts, ok := goldenConfigOptions[name]
			if !ok {
				t.Fatalf("no options for %s", in)
			}
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			base, err := ParseConfig(raw)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			before := base.DeepCopy()
			cfg, err := Generate(base, opts)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(before, base); diff != "" {
				t.Errorf("Generate changed its base (-before +after):\n%s", diff)
			}
			got, err := MarshalConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestGenerateGolden -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("generated config differs from %s (-want +got):\n%s", golden, diff)
			}
			// What Generate writes is a configuration kind accepts
			// strictly, and reading it back gives the same cluster.
			again, err := ParseConfig(got)
			if err != nil {
				t.Fatalf("generated config does not parse: %v", err)
			}
			if diff := cmp.Diff(cfg, again); diff != "" {
				t.Errorf("generated config does not round-trip (-generated +parsed):\n%s", diff)
			}
		})
	}
}

func TestParseConfigInvalid(t *testing.T) {
	inputs, err := filepath.Glob("testdata/config/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no invalid-*.yaml in testdata/config")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseConfig(raw); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseConfig = %v, want an error wrapping ErrInvalidConfig", err)
			}
		})
	}
}

// The embedded configuration is the repository's kind/cluster.yaml, and the
// additions keep what the kit's cluster needs from it.
func TestGenerateFromRepositoryConfig(t *testing.T) {
	base, err := ParseConfig(kindconfig.ClusterYAML)
	if err != nil {
		t.Fatalf("kind/cluster.yaml: %v", err)
	}
	cfg, err := Generate(base, ConfigOptions{ClusterName: "k", NodeImage: "img:1", Workers: 3, StateDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	names := NodeNames("k", cfg)
	if want := []string{"k-control-plane", "k-worker", "k-worker2", "k-worker3"}; !cmp.Equal(names, want) {
		t.Fatalf("NodeNames = %v, want %v", names, want)
	}
	for i, n := range cfg.Nodes {
		if n.Image != "img:1" {
			t.Errorf("%s: image %q, want img:1", names[i], n.Image)
		}
		mounts := map[string]v1alpha4.Mount{}
		for _, m := range n.ExtraMounts {
			if _, dup := mounts[m.ContainerPath]; dup {
				t.Errorf("%s: two mounts at %s", names[i], m.ContainerPath)
			}
			mounts[m.ContainerPath] = m
		}
		dirs := StateDirs("/s", names[i])
		want := map[string]v1alpha4.Mount{
			EmulatorRoot:       {HostPath: dirs.Emulator, ContainerPath: EmulatorRoot},
			NodeCDIDir:         {HostPath: dirs.CDI, ContainerPath: NodeCDIDir},
			NodeKubeletRootDir: {HostPath: "/s/" + names[i] + "/kubelet", ContainerPath: "/var/lib/kubelet", Propagation: v1alpha4.MountPropagationNone},
		}
		if n.Role == v1alpha4.ControlPlaneRole {
			// The scheduler's configuration, read with --config.
			want[NodeSchedulerConfig] = v1alpha4.Mount{HostPath: "/s/scheduler-config.yaml", ContainerPath: NodeSchedulerConfig, Readonly: true}
			if len(n.KubeadmConfigPatchesJSON6902) != 1 || !strings.Contains(n.KubeadmConfigPatchesJSON6902[0].Patch, "/scheduler/extraArgs/-") {
				t.Errorf("%s: JSON 6902 patches %+v, want the scheduler's --config", names[i], n.KubeadmConfigPatchesJSON6902)
			}
		} else if len(n.KubeadmConfigPatchesJSON6902) != 0 {
			t.Errorf("%s: a worker with JSON 6902 patches %+v", names[i], n.KubeadmConfigPatchesJSON6902)
		}
		if diff := cmp.Diff(want, mounts); diff != "" {
			t.Errorf("%s: mounts (-want +got):\n%s", names[i], diff)
		}
		if i > 0 && len(n.KubeadmConfigPatches) != 2 {
			t.Errorf("%s: %d kubeadm patches, want the base worker's 2 (verbosity, failCgroupV1)", names[i], len(n.KubeadmConfigPatches))
		}
	}
	if !cfg.FeatureGates["DRADeviceTaints"] || cfg.RuntimeConfig["resource.k8s.io/v1alpha3"] != "true" || len(cfg.ContainerdConfigPatches) != 1 {
		t.Errorf("feature gates, runtime config or containerd patches lost: %v %v %d", cfg.FeatureGates, cfg.RuntimeConfig, len(cfg.ContainerdConfigPatches))
	}
	if cfg.Networking.DisableDefaultCNI || cfg.Networking.KubeProxyMode != "" {
		t.Errorf("networking changed without Offline: %+v", cfg.Networking)
	}
}

func TestGenerateRefuses(t *testing.T) {
	base := &v1alpha4.Cluster{Nodes: []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}}}
	for name, opts := range map[string]ConfigOptions{
		"no cluster name":    {Workers: 1},
		"relative state dir": {ClusterName: "c", StateDir: "state"},
	} {
		if _, err := Generate(base, opts); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Generate = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestNodeNamesFollowKind(t *testing.T) {
	// kind's own namer test (pkg/cluster/internal/providers/common).
	cfg := &v1alpha4.Cluster{}
	for _, r := range []v1alpha4.NodeRole{"control-plane", "control-plane", "control-plane", "worker", "worker", "worker"} {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: r})
	}
	want := []string{"ab1-control-plane", "ab1-control-plane2", "ab1-control-plane3", "ab1-worker", "ab1-worker2", "ab1-worker3"}
	if got := NodeNames("ab1", cfg); !cmp.Equal(got, want) {
		t.Errorf("NodeNames = %v, want %v", got, want)
	}
}

func FuzzParseConfig(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/config/*.yaml")
	for _, in := range inputs {
		raw, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		gen, err := Generate(cfg, ConfigOptions{ClusterName: "f", Workers: 1, StateDir: "/f"})
		if err != nil {
			t.Fatalf("Generate of a parsed config: %v", err)
		}
		out, err := MarshalConfig(gen)
		if err != nil {
			t.Fatalf("MarshalConfig: %v", err)
		}
		if _, err := ParseConfig(out); err != nil {
			t.Fatalf("generated config does not parse: %v\n%s", err, out)
		}
	})
}

// TestFabricProfileNamesKindNodes: kind/conformance-fabric.yaml is a valid
// cluster profile whose nodes are exactly the nodes kind gives cluster
// "drakit" with three workers, in order (the TPU hosts stack in that order).
func TestFabricProfileNamesKindNodes(t *testing.T) {
	src, err := clusterprofile.Load("../../kind/conformance-fabric.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusterprofile.Resolve(src)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ParseConfig(kindconfig.ClusterYAML)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Generate(base, ConfigOptions{ClusterName: DefaultClusterName, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range c.Nodes {
		got = append(got, n.Name)
	}
	if want := NodeNames(DefaultClusterName, cfg); !slices.Equal(got, want) {
		t.Errorf("profile nodes %q, want kind's %q", got, want)
	}
}

// TestSchedulerConfig: the scheduler configuration a kind control plane
// reads is a strict KubeSchedulerConfiguration with kubeadm's kubeconfig
// and the DynamicResources bindingTimeout, and the patch that points
// kube-scheduler at it is valid JSON 6902 that only adds.
func TestSchedulerConfig(t *testing.T) {
	var conf struct {
		APIVersion       string `json:"apiVersion"`
		Kind             string `json:"kind"`
		ClientConnection struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"clientConnection"`
		LeaderElection struct {
			LeaderElect bool `json:"leaderElect"`
		} `json:"leaderElection"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string `json:"name"`
				Args struct {
					BindingTimeout string `json:"bindingTimeout"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := sigsyaml.UnmarshalStrict(SchedulerConfigYAML, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.APIVersion != "kubescheduler.config.k8s.io/v1" || conf.Kind != "KubeSchedulerConfiguration" ||
		conf.ClientConnection.Kubeconfig != "/etc/kubernetes/scheduler.conf" || len(conf.Profiles) != 1 ||
		len(conf.Profiles[0].PluginConfig) != 1 || conf.Profiles[0].PluginConfig[0].Name != "DynamicResources" ||
		conf.Profiles[0].PluginConfig[0].Args.BindingTimeout != "30s" {
		t.Errorf("scheduler configuration %+v", conf)
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := sigsyaml.UnmarshalStrict([]byte(schedulerConfigPatch.Patch), &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Op != "add" || ops[0].Path != "/scheduler/extraArgs/-" || ops[1].Path != "/scheduler/extraVolumes" {
		t.Errorf("patch %+v: want the --config argument appended and the volume added", ops)
	}
}
