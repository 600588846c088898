package helm_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"drakit.dev/drakit/reference/deploy"
)

// gpuCases are value sets of the GPU chart and the reference/deploy
// options they stand for: the defaults and each option.
var gpuCases = []struct {
	name string
	set  []string
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.Options) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.Options) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=gpu.example.com"}, func(o *deploy.Options) { o.DriverName = "gpu.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"registrar dir", []string{"registrarDir=/var/lib/kubelet/drakit-interpose/registry"},
		func(o *deploy.Options) { o.RegistrarDir = "/var/lib/kubelet/drakit-interpose/registry" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"driver root", []string{"hostRoot=/run/nvidia/driver"}, func(o *deploy.Options) { o.HostRoot = "/run/nvidia/driver" }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"partitionable alpha", []string{"gpu.partitionableAlpha=true"}, func(o *deploy.Options) { o.PartitionableAlpha = true }},
	{"no device metadata", []string{"gpu.deviceMetadata=false"}, func(o *deploy.Options) { o.DeviceMetadata = false }},
	{"binding conditions", []string{"gpu.bindingConditions=true"}, func(o *deploy.Options) { o.BindingConditions = true }},
	{"list attributes", []string{"gpu.listAttributes=true"}, func(o *deploy.Options) { o.ListAttributes = true }},
	{"runtime class", []string{"gpu.runtimeClassName=drakit-mig-manager"}, func(o *deploy.Options) { o.RuntimeClassName = "drakit-mig-manager" }},
	{"privileged", []string{"gpu.privileged=true"}, func(o *deploy.Options) { o.Privileged = true }},
	{"IMEX controller", []string{"gpu.imex.channels=8"}, func(o *deploy.Options) { o.IMEXChannels = 8 }},
	{"IMEX controller with the kubelet's apiserver", []string{"gpu.imex.channels=2048", "apiServer.host=", "apiServer.port=0"},
		func(o *deploy.Options) { o.IMEXChannels, o.APIServerHost, o.APIServerPort = 2048, "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"hostRoot=/r/nodes/2/emulator", "httpPort=9480",
	}, func(o *deploy.Options) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.HostRoot, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/emulator", 9480
	}},
	{"node with a nodeSelector", []string{"node=127.0.0.2", "nodeSelector.kubernetes\\.io/hostname=127.0.0.3"},
		func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"every option", []string{
		"driverName=gpu.example.com", "image.repository=registry.example/driver", "image.tag=v2",
		"kubeletRootDir=/var/lib/k8s/kubelet", "registrarDir=/var/lib/k8s/kubelet/interposed",
		"cdiDir=/etc/cdi", "hostRoot=/run/nvidia/driver", "apiServer.host=192.168.1.1", "apiServer.port=6444",
		"gpu.partitionableAlpha=true", "gpu.deviceMetadata=false", "gpu.bindingConditions=true", "gpu.listAttributes=true",
		"gpu.runtimeClassName=nvidia", "gpu.privileged=true", "gpu.imex.channels=4", "httpPort=9555", "node=worker-1",
	}, func(o *deploy.Options) {
		*o = deploy.Options{
			Kind:       deploy.KindGPU,
			DriverName: "gpu.example.com", Image: "registry.example/driver:v2",
			KubeletRootDir: "/var/lib/k8s/kubelet", RegistrarDir: "/var/lib/k8s/kubelet/interposed",
			CDIDir: "/etc/cdi", HostRoot: "/run/nvidia/driver", APIServerHost: "192.168.1.1", APIServerPort: 6444,
			PartitionableAlpha: true, DeviceMetadata: false, BindingConditions: true, ListAttributes: true,
			RuntimeClassName: "nvidia", Privileged: true, IMEXChannels: 4, HTTPPort: 9555, Node: "worker-1", Timeout: o.Timeout,
		}
	}},
}

// TestGPUChartIsReferenceDeploy renders the chart for each case and
// compares its objects with reference/deploy's for the same options.
func TestGPUChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range gpuCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindGPU)
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			want := m.List()
			got := renderObjects(t, gpuChart, tc.set...)
			if err := compare(want, got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 8 objects and the MIG class, 7 more with the IMEX controller.
			wantCount := 9
			if opts.IMEXChannels > 0 {
				wantCount = 16
			}
			if len(got) != wantCount {
				t.Errorf("chart rendered %d objects, want %d", len(got), wantCount)
			}
		})
	}
}

// TestGPUChartNamespaceNotCreated: namespace.create=false leaves only the
// Namespace out.
func TestGPUChartNamespaceNotCreated(t *testing.T) {
	m, err := deploy.Objects(deploy.DefaultOptions(deploy.KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(m.List(), func(o runtime.Object) bool {
		return o.GetObjectKind().GroupVersionKind().Kind == "Namespace"
	})
	if err := compare(want, renderObjects(t, gpuChart, "namespace.create=false")); err != nil {
		t.Error(err)
	}
}

// TestGPUChartRefusesWhatDeployRefuses: values that reference/deploy's
// Options.Validate refuses fail to render.
func TestGPUChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.Options)
	}{
		{"driverName=GPU_drakit", func(o *deploy.Options) { o.DriverName = "GPU_drakit" }},
		{"driverName=" + strings.Repeat("a", 60) + ".dev", func(o *deploy.Options) { o.DriverName = strings.Repeat("a", 60) + ".dev" }},
		{"cdiDir=var/run/cdi", func(o *deploy.Options) { o.CDIDir = "var/run/cdi" }},
		{"kubeletRootDir=/var/lib/kubelet/", func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/kubelet/" }},
		{"hostRoot=/opt/../emulator", func(o *deploy.Options) { o.HostRoot = "/opt/../emulator" }},
		{"registrarDir=/var/lib/registry", func(o *deploy.Options) { o.RegistrarDir = "/var/lib/registry" }},
		{"apiServer.port=70000", func(o *deploy.Options) { o.APIServerPort = 70000 }},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.Options) { o.APIServerHost = "" }},
		{"gpu.imex.channels=2049", func(o *deploy.Options) { o.IMEXChannels = 2049 }},
		{"gpu.imex.channels=-1", func(o *deploy.Options) { o.IMEXChannels = -1 }},
		{"gpu.runtimeClassName=Nvidia_Runtime", func(o *deploy.Options) { o.RuntimeClassName = "Nvidia_Runtime" }},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindGPU)
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(gpuChart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			t.Logf("refused: %v", err)
		})
	}
}
