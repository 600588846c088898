package environment

import (
	"testing"

	"drakit.dev/drakit/reference/deploy"
)

// TestReferenceDriversTakeTheNodes: every reference driver deploys with
// the node's paths, pin, API server (where the layout names one) and port
// offset, the kinds with a state directory in the node's; the rest of the
// options stay as they were.
func TestReferenceDriversTakeTheNodes(t *testing.T) {
	n := Node{
		Name: "n2", KubeletRootDir: "/k", CDIDir: "/cdi", EmulatorRoot: "/emu", StateDir: "/state",
		APIServerHost: "172.18.0.2", APIServerPort: 6443, HTTPPortOffset: 10,
	}
	type common struct {
		kubelet, cdi, root, node, host string
		port, httpPort                 int
	}
	for _, kind := range deploy.Kinds() {
		opts := deploy.DefaultOptions(kind)
		got := onNode(opts, n, "n2")
		want := common{"/k", "/cdi", "/emu", "n2", "172.18.0.2", 6443, opts.HTTPPort + 10}
		if c := (common{got.KubeletRootDir, got.CDIDir, got.HostRoot, got.Node, got.APIServerHost, got.APIServerPort, got.HTTPPort}); c != want {
			t.Errorf("%s: deployed with %+v, want %+v", kind, c, want)
		}
		wantState := ""
		if opts.StateDir != "" {
			wantState = "/state/" + string(kind) + "-driver"
		}
		if got.StateDir != wantState {
			t.Errorf("%s: state directory %q, want %q", kind, got.StateDir, wantState)
		}
		if got.DriverName != opts.DriverName || got.Shapes != opts.Shapes || got.VFsPerPF != opts.VFsPerPF || got.Devices != opts.Devices {
			t.Errorf("%s: the kind's options changed: %+v, want %+v", kind, got, opts)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}

	// A node without an API server of its own keeps the options'; a
	// driver without an HTTP endpoint (port 0) gets none on any node.
	o := deploy.DefaultOptions(deploy.KindGPU)
	o.HTTPPort = 0
	plain := onNode(o, Node{Name: "n1", HTTPPortOffset: 10}, "")
	if plain.APIServerHost != o.APIServerHost || plain.APIServerPort != o.APIServerPort || plain.HTTPPort != 0 || plain.Node != "" {
		t.Errorf("default node: deployed with API server %s:%d, HTTP port %d, pin %q; want the options' %s:%d, 0, none",
			plain.APIServerHost, plain.APIServerPort, plain.HTTPPort, plain.Node, o.APIServerHost, o.APIServerPort)
	}
}
