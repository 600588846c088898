package environment

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/deploy"
)

// applied runs the Driver referenceDriver builds from opts and fields on
// node n pinned to pin, and returns the options it would deploy.
func applied[O any](t *testing.T, opts O, fields func(*O) nodeFields, adjust func(*O, Node), n Node, pin string) O {
	t.Helper()
	var got O
	d := referenceDriver("d", opts, fields, adjust, func(_ context.Context, _ kubernetes.Interface, o O) error {
		got = o
		return nil
	})
	if err := d.Apply(context.Background(), nil, n, pin); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReferenceDriversTakeTheNodes: every reference driver deploys with
// the node's paths, pin, API server (where the layout names one) and port
// offset; the options it was built with stay as they were.
func TestReferenceDriversTakeTheNodes(t *testing.T) {
	n := Node{
		Name: "n2", KubeletRootDir: "/k", CDIDir: "/cdi", EmulatorRoot: "/emu", StateDir: "/state",
		APIServerHost: "172.18.0.2", APIServerPort: 6443, HTTPPortOffset: 10,
	}
	type common struct {
		kubelet, cdi, root, node, host string
		port, httpPort                 int
	}
	check := func(name string, got, want common) {
		t.Helper()
		if got != want {
			t.Errorf("%s: deployed with %+v, want %+v", name, got, want)
		}
	}
	want := func(httpPort int) common {
		return common{"/k", "/cdi", "/emu", "n2", "172.18.0.2", 6443, httpPort + 10}
	}

	gpuOpts := deploy.DefaultOptions()
	gpu := applied(t, gpuOpts, gpuFields, nil, n, "n2")
	check("gpu", common{gpu.KubeletRootDir, gpu.CDIDir, gpu.DriverRoot, gpu.Node, gpu.APIServerHost, gpu.APIServerPort, gpu.HTTPPort}, want(deploy.DefaultHTTPPort))
	if gpuOpts != deploy.DefaultOptions() {
		t.Errorf("gpu: the options the driver was built with changed: %+v", gpuOpts)
	}
	nic := applied(t, deploy.DefaultNICOptions(), nicFields, nil, n, "n2")
	check("nic", common{nic.KubeletRootDir, nic.CDIDir, nic.HostRoot, nic.Node, nic.APIServerHost, nic.APIServerPort, nic.HTTPPort}, want(deploy.DefaultNICHTTPPort))
	tpu := applied(t, deploy.DefaultTPUOptions(), tpuFields, nil, n, "n2")
	check("tpu", common{tpu.KubeletRootDir, tpu.CDIDir, tpu.HostRoot, tpu.Node, tpu.APIServerHost, tpu.APIServerPort, tpu.HTTPPort}, want(deploy.DefaultTPUHTTPPort))
	if tpu.Shapes != deploy.DefaultTPUOptions().Shapes {
		t.Errorf("tpu: shapes %q, want the options' %q", tpu.Shapes, deploy.DefaultTPUOptions().Shapes)
	}

	cpu := applied(t, deploy.DefaultCPUOptions(), cpuFields, cpuStateDir, n, "n2")
	check("cpu", common{cpu.KubeletRootDir, cpu.CDIDir, cpu.HostRoot, cpu.Node, cpu.APIServerHost, cpu.APIServerPort, cpu.HTTPPort}, want(deploy.DefaultCPUHTTPPort))
	if cpu.StateDir != "/state/cpu-driver" {
		t.Errorf("cpu: checkpoints in %q, want the node's /state/cpu-driver", cpu.StateDir)
	}

	// A node without an API server of its own keeps the options'; a
	// driver without an HTTP endpoint (port 0) gets none on any node.
	o := deploy.DefaultOptions()
	o.HTTPPort = 0
	plain := applied(t, o, gpuFields, nil, Node{Name: "n1", HTTPPortOffset: 10}, "")
	if plain.APIServerHost != o.APIServerHost || plain.APIServerPort != o.APIServerPort || plain.HTTPPort != 0 || plain.Node != "" {
		t.Errorf("default node: deployed with API server %s:%d, HTTP port %d, pin %q; want the options' %s:%d, 0, none",
			plain.APIServerHost, plain.APIServerPort, plain.HTTPPort, plain.Node, o.APIServerHost, o.APIServerPort)
	}
}
