package helm_test

import (
	"testing"

	"drakit.dev/drakit/reference/deploy"
)

// cpuCases are value sets of the CPU chart and the reference/deploy
// options they stand for: the defaults and each option.
var cpuCases = []struct {
	name string
	set  []string
	opts func(*deploy.Options)
}{
	{"defaults", nil, func(*deploy.Options) {}},
	{"HTTP port", []string{"httpPort=19999"}, func(o *deploy.Options) { o.HTTPPort = 19999 }},
	{"no HTTP endpoint", []string{"httpPort=0"}, func(o *deploy.Options) { o.HTTPPort = 0 }},
	{"driver name", []string{"driverName=cpu.example.com"}, func(o *deploy.Options) { o.DriverName = "cpu.example.com" }},
	{"image", []string{"image.repository=registry.example/drakit/driver,image.tag=v1.2.3"},
		func(o *deploy.Options) { o.Image = "registry.example/drakit/driver:v1.2.3" }},
	{"kubelet root dir", []string{"kubeletRootDir=/var/lib/k8s/kubelet"}, func(o *deploy.Options) { o.KubeletRootDir = "/var/lib/k8s/kubelet" }},
	{"CDI dir", []string{"cdiDir=/etc/cdi"}, func(o *deploy.Options) { o.CDIDir = "/etc/cdi" }},
	{"host root", []string{"hostRoot=/var/lib/drakit/node-1"}, func(o *deploy.Options) { o.HostRoot = "/var/lib/drakit/node-1" }},
	{"state dir", []string{"stateDir=/var/lib/cpu-driver-state"}, func(o *deploy.Options) { o.StateDir = "/var/lib/cpu-driver-state" }},
	{"apiserver", []string{"apiServer.host=10.0.0.1,apiServer.port=443"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "10.0.0.1", 443 }},
	{"kubelet's apiserver", []string{"apiServer.host=,apiServer.port=0"},
		func(o *deploy.Options) { o.APIServerHost, o.APIServerPort = "", 0 }},
	{"node", []string{"node=127.0.0.2"}, func(o *deploy.Options) { o.Node = "127.0.0.2" }},
	{"node with its paths and port", []string{
		"node=node-2.example.com", "kubeletRootDir=/r/nodes/2/kubelet/root", "cdiDir=/r/nodes/2/cdi",
		"hostRoot=/r/nodes/2/emulator", "stateDir=/r/nodes/2/cpu-driver", "httpPort=9482",
	}, func(o *deploy.Options) {
		o.Node, o.KubeletRootDir, o.CDIDir, o.HostRoot, o.StateDir, o.HTTPPort = "node-2.example.com", "/r/nodes/2/kubelet/root", "/r/nodes/2/cdi",
			"/r/nodes/2/emulator", "/r/nodes/2/cpu-driver", 9482
	}},
}

// TestCPUChartIsReferenceDeploy renders the CPU chart for each case and
// compares its objects with reference/deploy's CPUObjects for the same
// options.
func TestCPUChartIsReferenceDeploy(t *testing.T) {
	for _, tc := range cpuCases {
		t.Run(tc.name, func(t *testing.T) {
			opts := deploy.DefaultOptions(deploy.KindCPU)
			tc.opts(&opts)
			m, err := deploy.Objects(opts)
			if err != nil {
				t.Fatalf("reference/deploy objects: %v", err)
			}
			got := renderObjects(t, cpuChart, tc.set...)
			if err := compare(m.List(), got); err != nil {
				t.Errorf("chart with %q against reference/deploy with %+v:\n%v", tc.set, opts, err)
			}
			if len(got) != 8 {
				t.Errorf("chart rendered %d objects, want 8", len(got))
			}
		})
	}
}
