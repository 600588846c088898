package environment

import (
	"slices"
	"testing"

	"drakit.dev/drakit/environment/kind"
	"drakit.dev/drakit/reference/deploy"
)

// TestKindRegistered: --provider kind is the kind adapter, with the
// lifecycle's interfaces, and its e2e-framework setters keep the adapter.
func TestKindRegistered(t *testing.T) {
	if !slices.Contains(ProviderNames(), "kind") {
		t.Fatalf("ProviderNames() = %v, want kind among them", ProviderNames())
	}
	p, err := NewProvider("kind", ProviderConfig{Kind: kind.ConfigOptions{NodeImage: "img"}, Drakit: "/bin/drakit"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Provider: p, ClusterName: "c", EmulatorProfile: "dgx-a100-mig", Drivers: []Driver{ReferenceDriver(deploy.DefaultOptions(deploy.KindGPU))}})
	if err != nil {
		t.Fatalf("New: %v (the kind provider must have node access)", err)
	}
	k, ok := e.cfg.Provider.(*Kind)
	if !ok {
		t.Fatalf("the provider after SetDefaults and WithName is %T, want *Kind", e.cfg.Provider)
	}
	if got := k.GetKubectlContext(); got != "kind-c" {
		t.Errorf("kubectl context %q, want kind-c (WithName reached the kind provider)", got)
	}
	if k.WithPath("/other/drakit"); k.drakit != "/other/drakit" {
		t.Errorf("WithPath: drakit %q", k.drakit)
	}
}

// TestKindArgv: the lifecycle's "drakit" is the drakit installed in the
// node; other commands run as they are.
func TestKindArgv(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"drakit", "emulator", "watch", "--stop"}, []string{"/opt/drakit/bin/drakit", "emulator", "watch", "--stop"}},
		{[]string{"test", "-c", "/dev/x"}, []string{"test", "-c", "/dev/x"}},
		{[]string{"/usr/bin/drakit"}, []string{"/usr/bin/drakit"}},
		{nil, nil},
	} {
		if got := KindArgv(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("KindArgv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	in := []string{"drakit", "x"}
	KindArgv(in)
	if in[0] != "drakit" {
		t.Errorf("KindArgv changed its argument: %q", in)
	}
}

// TestKindNode: the drivers get the paths inside the node (the reference
// driver's defaults), the kit the host directories mounted there and the
// host's cgroups, and both the control plane's address on the kind network.
func TestKindNode(t *testing.T) {
	n := KindNode("c-worker", "/state", "172.18.0.2", 6443)
	want := Node{
		Name: "c-worker", KubeletRootDir: "/var/lib/kubelet", CDIDir: "/var/run/cdi", EmulatorRoot: "/var/lib/drakit/emulator",
		LogDir: "/var/log/drakit", HostEmulatorRoot: "/state/c-worker/emulator", HostCDIDir: "/state/c-worker/cdi",
		HostKubeletRootDir: "/state/c-worker/kubelet", HostCgroupRoot: "/sys/fs/cgroup",
		APIServerHost: "172.18.0.2", APIServerPort: 6443,
	}
	if n != want {
		t.Errorf("KindNode = %+v, want %+v", n, want)
	}
	o := deploy.DefaultOptions(deploy.KindGPU)
	if n.EmulatorRoot != o.HostRoot || n.CDIDir != o.CDIDir || n.KubeletRootDir != o.KubeletRootDir {
		t.Errorf("node paths %+v differ from the reference driver's defaults %+v", n, o)
	}
	if n := KindNode("c-control-plane", "", "h", 1); n.HostEmulatorRoot != "" || n.HostCDIDir != "" || n.HostKubeletRootDir != "" {
		t.Errorf("without a state dir the host paths are %q %q %q, want none", n.HostEmulatorRoot, n.HostCDIDir, n.HostKubeletRootDir)
	}
}
