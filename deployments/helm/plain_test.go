package helm

import (
	"strings"
	"testing"

	"drakit.dev/drakit/reference/deploy"
	"drakit.dev/drakit/reference/plaindriver"
)

// plainCases are value sets of the plain driver's chart and the
// reference/deploy options they stand for: the defaults and each option.
var plainCases = []struct {
	name string
	set  []string
	opts func(*deploy.PlainOptions)
}{
	{"defaults", nil, func(*deploy.PlainOptions) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.PlainOptions) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.PlainOptions) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=plain.example.com"}, func(o *deploy.PlainOptions) { o.DriverName = "plain.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/plain-driver,image.tag=v1.2.3"},
		func(o *deploy.PlainOptions) { o.Image = "registry.example/drakit/plain-driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.PlainOptions) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.PlainOptions) { o.CDIDir = "/etc/cdi" }},
	{"state dir", []string{"stateDir=/srv/plain-driver"}, func(o *deploy.PlainOptions) { o.StateDir = "/srv/plain-driver" }},
	{"one device", []string{"devices=1"}, func(o *deploy.PlainOptions) { o.Devices = 1 }},
	{"most devices", []string{"devices=128"}, func(o *deploy.PlainOptions) { o.Devices = 128 }},
	{"defect extra-device", []string{"defect=extra-device,devices=2"},
		func(o *deploy.PlainOptions) { o.Defect, o.Devices = plaindriver.DefectExtraDevice, 2 }},
	{"defect leave-cdi-spec", []string{"defect=leave-cdi-spec"}, func(o *deploy.PlainOptions) { o.Defect = plaindriver.DefectLeaveCDISpec }},
	{"defect duplicate-device-names", []string{"defect=duplicate-device-names,devices=127"},
		func(o *deploy.PlainOptions) { o.Defect, o.Devices = plaindriver.DefectDuplicateDeviceNames, 127 }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.PlainOptions) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.PlainOptions) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.PlainOptions) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"stateDir=/r/nodes/2/plain-driver", "httpPort=9484",
	}, func(o *deploy.PlainOptions) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.StateDir, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/plain-driver", 9484
	}},
	{"every option", []string{
		"driverName=plain.example.com", "image.repository=registry.example/plain-driver", "image.tag=v2",
		"kubeletRootDir=/var/lib/k8s/kubelet", "cdiDir=/etc/cdi", "stateDir=/srv/plain",
		"devices=9", "defect=extra-device", "apiServer.host=192.168.1.1", "apiServer.port=6444", "httpPort=9555", "node=worker-1",
	}, func(o *deploy.PlainOptions) {
		*o = deploy.PlainOptions{
			DriverName: "plain.example.com", Image: "registry.example/plain-driver:v2",
			KubeletRootDir: "/var/lib/k8s/kubelet", CDIDir: "/etc/cdi", StateDir: "/srv/plain",
			Devices: 9, Defect: plaindriver.DefectExtraDevice, APIServerHost: "192.168.1.1", APIServerPort: 6444,
			HTTPPort: 9555, Node: "worker-1", Timeout: o.Timeout,
		}
	}},
}

// TestPlainChartIsReferenceDeploy renders the plain driver's chart for
// each case and compares its objects with reference/deploy's PlainObjects
// for the same options.
func TestPlainChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range plainCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultPlainOptions()
			tc.opts(&opts)
			m, err := deploy.PlainObjects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, plainChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			if len(got) != 8 {
				t.Errorf("chart rendered %d objects, want 8", len(got))
			}
		})
	}
}

// TestPlainChartRefusesWhatDeployRefuses: values that reference/deploy's
// PlainOptions.Validate refuses fail to render, each naming the value.
func TestPlainChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.PlainOptions)
		// names is what the error says: the value's name.
		names string
	}{
		{"driverName=Plain_drakit", func(o *deploy.PlainOptions) { o.DriverName = "Plain_drakit" }, "driverName"},
		{"driverName=" + strings.Repeat("a", 60) + ".dev", func(o *deploy.PlainOptions) { o.DriverName = strings.Repeat("a", 60) + ".dev" }, "driverName"},
		{"devices=0", func(o *deploy.PlainOptions) { o.Devices = 0 }, "devices"},
		{"devices=129", func(o *deploy.PlainOptions) { o.Devices = 129 }, "devices"},
		{"defect=extra-device,devices=1", func(o *deploy.PlainOptions) { o.Defect, o.Devices = plaindriver.DefectExtraDevice, 1 }, "devices"},
		{"defect=duplicate-device-names,devices=128", func(o *deploy.PlainOptions) {
			o.Defect, o.Devices = plaindriver.DefectDuplicateDeviceNames, 128
		}, "devices"},
		{"defect=crash", func(o *deploy.PlainOptions) { o.Defect = "crash" }, "defect"},
		{"stateDir=state", func(o *deploy.PlainOptions) { o.StateDir = "state" }, "stateDir"},
		{"stateDir=/var/lib/drakit/../plain", func(o *deploy.PlainOptions) { o.StateDir = "/var/lib/drakit/../plain" }, "stateDir"},
		{"stateDir=/var/lib", func(o *deploy.PlainOptions) { o.StateDir = "/var/lib" }, "stateDir"},
		{"stateDir=/dev/plain", func(o *deploy.PlainOptions) { o.StateDir = "/dev/plain" }, "stateDir"},
		{"stateDir=/var/lib/kubelet/plain", func(o *deploy.PlainOptions) { o.StateDir = "/var/lib/kubelet/plain" }, "overlap"},
		{"cdiDir=/var/lib/drakit/plain-driver/cdi", func(o *deploy.PlainOptions) { o.CDIDir = "/var/lib/drakit/plain-driver/cdi" }, "overlap"},
		{"kubeletRootDir=/var/lib/" + strings.Repeat("k", 70), func(o *deploy.PlainOptions) {
			o.KubeletRootDir = "/var/lib/" + strings.Repeat("k", 70)
		}, "AF_UNIX"},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.PlainOptions) { o.APIServerHost = "" }, "apiServer"},
		{"apiServer.port=70000", func(o *deploy.PlainOptions) { o.APIServerPort = 70000 }, "apiServer"},
		{"httpPort=-1", func(o *deploy.PlainOptions) { o.HTTPPort = -1 }, "httpPort"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultPlainOptions()
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(plainChart, tc.set)
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
