package helm_test

import (
	"testing"

	"drakit.dev/drakit/reference/deploy"
)

// nicCases are value sets of the NIC chart and the reference/deploy
// options they stand for: the defaults and each option.
var nicCases = []struct {
	name string
	set  []string
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.Options) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.Options) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=nic.example.com"}, func(o *deploy.Options) { o.DriverName = "nic.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"host root", []string{"hostRoot=/var/lib/drakit/node-1"}, func(o *deploy.Options) { o.HostRoot = "/var/lib/drakit/node-1" }},
	{"VFs per PF", []string{"nic.vfsPerPF=0"}, func(o *deploy.Options) { o.VFsPerPF = 0 }},
	{"most VFs per PF", []string{"nic.vfsPerPF=256"}, func(o *deploy.Options) { o.VFsPerPF = 256 }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"hostRoot=/r/nodes/2/emulator", "httpPort=9481",
	}, func(o *deploy.Options) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.HostRoot, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi", "/r/nodes/2/emulator", 9481
	}},
}

// TestNICChartIsReferenceDeploy renders the NIC chart for each case and
// compares its objects with reference/deploy's NICObjects for the same
// options.
func TestNICChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range nicCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindNIC)
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, nicChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			// 8 objects and the VF class.
			if len(got) != 9 {
				t.Errorf("chart rendered %d objects, want 9", len(got))
			}
		})
	}
}

// TestNICChartRefusesWhatDeployRefuses: values that reference/deploy's
// NICOptions.Validate refuses fail to render.
func TestNICChartRefusesWhatDeployRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  string
		opts func(*deploy.Options)
	}{
		{"driverName=NIC_drakit", func(o *deploy.Options) { o.DriverName = "NIC_drakit" }},
		{"nic.vfsPerPF=257", func(o *deploy.Options) { o.VFsPerPF = 257 }},
		{"nic.vfsPerPF=-1", func(o *deploy.Options) { o.VFsPerPF = -1 }},
		{"hostRoot=emulator", func(o *deploy.Options) { o.HostRoot = "emulator" }},
		{"cdiDir=/etc/cdi/", func(o *deploy.Options) { o.CDIDir = "/etc/cdi/" }},
		{"apiServer.host=,apiServer.port=6443", func(o *deploy.Options) { o.APIServerHost = "" }},
	} {
		t.Run(tc.set, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindNIC)
			tc.opts(&opts)
			if err := opts.Validate(); err == nil {
				t.Fatalf("reference/deploy accepts %+v", opts)
			}
			_, err := render(nicChart, tc.set)
			if err == nil {
				t.Fatalf("chart renders with %s", tc.set)
			}
			t.Logf("refused: %v", err)
		})
	}
}
