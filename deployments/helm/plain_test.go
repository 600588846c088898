package helm_test

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
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.Options) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.Options) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=plain.example.com"}, func(o *deploy.Options) { o.DriverName = "plain.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/plain-driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/plain-driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"state dir", []string{"stateDir=/srv/plain-driver"}, func(o *deploy.Options) { o.StateDir = "/srv/plain-driver" }},
	{"one device", []string{"plain.devices=1"}, func(o *deploy.Options) { o.Devices = 1 }},
	{"most devices", []string{"plain.devices=128"}, func(o *deploy.Options) { o.Devices = 128 }},
	{"defect extra-device", []string{"plain.defect=extra-device,plain.devices=2"},
		func(o *deploy.Options) { o.Defect, o.Devices = plaindriver.DefectExtraDevice, 2 }},
	{"defect leave-cdi-spec", []string{"plain.defect=leave-cdi-spec"}, func(o *deploy.Options) { o.Defect = plaindriver.DefectLeaveCDISpec }},
	{"defect duplicate-device-names", []string{"plain.defect=duplicate-device-names,plain.devices=127"},
		func(o *deploy.Options) { o.Defect, o.Devices = plaindriver.DefectDuplicateDeviceNames, 127 }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"stateDir=/r/nodes/2/plain-driver", "httpPort=9484",
	}, func(o *deploy.Options) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.StateDir, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/plain-driver", 9484
	}},
	{"style partitions", []string{"plain.style=partitions"}, func(o *deploy.Options) { o.Style = plaindriver.StylePartitions }},
	{"style consumable-capacity", []string{"plain.style=consumable-capacity"},
		func(o *deploy.Options) { o.Style = plaindriver.StyleConsumableCapacity }},
	{"style strict-config", []string{"plain.style=strict-config"}, func(o *deploy.Options) { o.Style = plaindriver.StyleStrictConfig }},
	{"every option", []string{
		"driverName=plain.example.com", "image.repository=registry.example/plain-driver", "image.tag=v2",
		"kubeletRootDir=/var/lib/k8s/kubelet", "cdiDir=/etc/cdi", "stateDir=/srv/plain",
		"plain.devices=9", "plain.defect=extra-device", "apiServer.host=192.168.1.1", "apiServer.port=6444", "httpPort=9555", "node=worker-1",
	}, func(o *deploy.Options) {
		*o = deploy.Options{
			Kind:       deploy.KindPlain,
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
			opts := deploy.DefaultOptions(deploy.KindPlain)
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, plainChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 7 objects and a DeviceClass per kind of device.
			if want := 7 + len(plaindriver.DeviceClasses(opts.DriverName, opts.Style)); len(got) != want {
				t.Errorf("chart rendered %d objects, want %d", len(got), want)
			}
		})
	}
}

// TestPlainChartVariant: a variant installed as a release named
// drakit-plain-<variant> (the names it takes) renders, with nothing but
// plain.variant and its style, what reference/deploy renders for the
// variant: its namespace and objects drakit-plain-<variant>, driver name
// <variant>.plain.drakit.dev and state directory <default>-<variant>.
func TestPlainChartVariant(t *testing.T) {
	for _, style := range plaindriver.Styles() {
		t.Run(string(style), func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindPlain)
			opts.Variant, opts.Style = "v-"+strings.Split(string(style), "-")[0], style
			opts.DriverName = plaindriver.VariantDriverName(opts.Variant)
			opts.StateDir += "-" + opts.Variant
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderReleaseObjects(t, plainChart, deploy.PlainVariantName(opts.Variant),
				"plain.variant="+opts.Variant, "plain.style="+string(style))
			if err := compare(m.List(), got); err != nil {
				t.Errorf("variant %s against reference/deploy:\n%v", opts.Variant, err)
			}
		})
	}
}

// TestPlainChartRefusesWhatDeployRefuses: values that reference/deploy's
// PlainOptions.Validate refuses fail to render, each naming the value.
func TestPlainChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.Options)
		// names is what the error says: the value's name.
		names string
	}{
		{"driverName=Plain_drakit", func(o *deploy.Options) { o.DriverName = "Plain_drakit" }, "driverName"},
		{"driverName=" + strings.Repeat("a", 60) + ".dev", func(o *deploy.Options) { o.DriverName = strings.Repeat("a", 60) + ".dev" }, "driverName"},
		{"plain.devices=0", func(o *deploy.Options) { o.Devices = 0 }, "devices"},
		{"plain.devices=129", func(o *deploy.Options) { o.Devices = 129 }, "devices"},
		{"plain.defect=extra-device,plain.devices=1", func(o *deploy.Options) { o.Defect, o.Devices = plaindriver.DefectExtraDevice, 1 }, "devices"},
		{"plain.defect=duplicate-device-names,plain.devices=128", func(o *deploy.Options) {
			o.Defect, o.Devices = plaindriver.DefectDuplicateDeviceNames, 128
		}, "devices"},
		{"plain.defect=crash", func(o *deploy.Options) { o.Defect = "crash" }, "defect"},
		{"stateDir=state", func(o *deploy.Options) { o.StateDir = "state" }, "stateDir"},
		{"stateDir=/var/lib/drakit/../plain", func(o *deploy.Options) { o.StateDir = "/var/lib/drakit/../plain" }, "stateDir"},
		{"stateDir=/var/lib", func(o *deploy.Options) { o.StateDir = "/var/lib" }, "stateDir"},
		{"stateDir=/dev/plain", func(o *deploy.Options) { o.StateDir = "/dev/plain" }, "stateDir"},
		{"stateDir=/var/lib/kubelet/plain", func(o *deploy.Options) { o.StateDir = "/var/lib/kubelet/plain" }, "overlap"},
		{"cdiDir=/var/lib/drakit/plain-driver/cdi", func(o *deploy.Options) { o.CDIDir = "/var/lib/drakit/plain-driver/cdi" }, "overlap"},
		{"kubeletRootDir=/var/lib/" + strings.Repeat("k", 70), func(o *deploy.Options) {
			o.KubeletRootDir = "/var/lib/" + strings.Repeat("k", 70)
		}, "AF_UNIX"},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.Options) { o.APIServerHost = "" }, "apiServer"},
		{"apiServer.port=70000", func(o *deploy.Options) { o.APIServerPort = 70000 }, "apiServer"},
		{"httpPort=-1", func(o *deploy.Options) { o.HTTPPort = -1 }, "httpPort"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindPlain)
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
