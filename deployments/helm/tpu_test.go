package helm_test

import (
	"strings"
	"testing"

	"drakit.dev/drakit/reference/deploy"
)

// tpuCases are value sets of the TPU chart and the reference/deploy
// options they stand for: the defaults and each option.
var tpuCases = []struct {
	name string
	set  []string
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.Options) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.Options) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=tpu.example.com"}, func(o *deploy.Options) { o.DriverName = "tpu.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"host root", []string{"hostRoot=/var/lib/drakit/node-1"}, func(o *deploy.Options) { o.HostRoot = "/var/lib/drakit/node-1" }},
	{"shapes", []string{"tpu.shapes=2x2x1"}, func(o *deploy.Options) { o.Shapes = "2x2x1" }},
	{"shapes as written", []string{"tpu.shapes=4x4x4\\, full\\,4x4x4"}, func(o *deploy.Options) { o.Shapes = "4x4x4, full,4x4x4" }},
	{"largest shape", []string{"tpu.shapes=64x64x2"}, func(o *deploy.Options) { o.Shapes = "64x64x2" }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"hostRoot=/r/nodes/2/emulator", "httpPort=9483",
	}, func(o *deploy.Options) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.HostRoot, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/emulator", 9483
	}},
	{"every option", []string{
		"driverName=tpu.example.com", "image.repository=registry.example/driver", "image.tag=v2",
		"kubeletRootDir=/var/lib/k8s/kubelet", "cdiDir=/etc/cdi", "hostRoot=/srv/emulator",
		"tpu.shapes=2x2x4\\,full", "apiServer.host=192.168.1.1", "apiServer.port=6444", "httpPort=9555", "node=worker-1",
	}, func(o *deploy.Options) {
		*o = deploy.Options{
			Kind:       deploy.KindTPU,
			DriverName: "tpu.example.com", Image: "registry.example/driver:v2",
			KubeletRootDir: "/var/lib/k8s/kubelet", CDIDir: "/etc/cdi", HostRoot: "/srv/emulator",
			Shapes: "2x2x4,full", APIServerHost: "192.168.1.1", APIServerPort: 6444, HTTPPort: 9555, Node: "worker-1",
			Timeout: o.Timeout,
		}
	}},
}

// TestTPUChartIsReferenceDeploy renders the TPU chart for each case and
// compares its objects with reference/deploy's TPUObjects for the same
// options.
func TestTPUChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range tpuCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindTPU)
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, tpuChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 8 objects, the sub-slice class and the controller's 6.
			if len(got) != 15 {
				t.Errorf("chart rendered %d objects, want 15", len(got))
			}
		})
	}
}

// TestTPUChartRefusesWhatDeployRefuses: values that reference/deploy's
// TPUOptions.Validate refuses fail to render, each naming the value.
func TestTPUChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.Options)
		// names is what the error says: the value's name.
		names string
	}{
		{"driverName=TPU_drakit", func(o *deploy.Options) { o.DriverName = "TPU_drakit" }, "driverName"},
		{"tpu.shapes=", func(o *deploy.Options) { o.Shapes = "" }, "shapes"},
		{"tpu.shapes=2x2x2\\,", func(o *deploy.Options) { o.Shapes = "2x2x2," }, "shapes"},
		{"tpu.shapes=2x0x2", func(o *deploy.Options) { o.Shapes = "2x0x2" }, "shapes"},
		{"tpu.shapes=02x2", func(o *deploy.Options) { o.Shapes = "02x2" }, "shapes"},
		{"tpu.shapes=65x1x1", func(o *deploy.Options) { o.Shapes = "65x1x1" }, "shapes"},
		{"tpu.shapes=2x2x2x2", func(o *deploy.Options) { o.Shapes = "2x2x2x2" }, "shapes"},
		{"tpu.shapes=64x64x3", func(o *deploy.Options) { o.Shapes = "64x64x3" }, "shapes"},
		{"tpu.shapes=half", func(o *deploy.Options) { o.Shapes = "half" }, "shapes"},
		{"hostRoot=emulator", func(o *deploy.Options) { o.HostRoot = "emulator" }, "hostRoot"},
		{"hostRoot=/sys", func(o *deploy.Options) { o.HostRoot = "/sys" }, "hostRoot"},
		{"hostRoot=/var/lib", func(o *deploy.Options) { o.HostRoot = "/var/lib" }, "hostRoot"},
		{"cdiDir=/etc/cdi/", func(o *deploy.Options) { o.CDIDir = "/etc/cdi/" }, "cdiDir"},
		{"kubeletRootDir=/usr/lib/kubelet", func(o *deploy.Options) { o.KubeletRootDir = "/usr/lib/kubelet" }, "kubeletRootDir"},
		{"hostRoot=/var/lib/kubelet", func(o *deploy.Options) { o.HostRoot = "/var/lib/kubelet" }, "overlap"},
		{"cdiDir=/var/lib/drakit/emulator/cdi", func(o *deploy.Options) { o.CDIDir = "/var/lib/drakit/emulator/cdi" }, "overlap"},
		{"kubeletRootDir=/var/lib/" + strings.Repeat("k", 60), func(o *deploy.Options) {
			o.KubeletRootDir = "/var/lib/" + strings.Repeat("k", 60)
		}, "AF_UNIX"},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.Options) { o.APIServerHost = "" }, "apiServer"},
		{"apiServer.port=0", func(o *deploy.Options) { o.APIServerPort = 0 }, "apiServer"},
		{"httpPort=65536", func(o *deploy.Options) { o.HTTPPort = 65536 }, "httpPort"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindTPU)
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(tpuChart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error does not name %s: %v", tc.names, err)
			}
			t.Logf("refused: %v", err)
		})
	}
}
