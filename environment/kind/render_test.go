package kind

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func install(src, dst, mode string) NodeCommand {
	return NodeCommand{Argv: []string{"sh", "-c", installScript, "install", dst, mode}, Stdin: src}
}

func TestRenderCommands(t *testing.T) {
	for _, tc := range []struct {
		name string
		node string
		opts RenderOptions
		want []NodeCommand
	}{{
		name: "profile name with shim and nvidia-smi beside it",
		node: "drakit-worker",
		opts: RenderOptions{Profile: "dgx-a100-mig", Drakit: "/o/bin/drakit", Shim: "/o/lib/libnvidia-ml.so"},
		want: []NodeCommand{
			install("/o/bin/drakit", "/opt/drakit/bin/drakit", "0755"),
			install("/o/lib/libnvidia-ml.so", "/opt/drakit/lib/libnvidia-ml.so", "0755"),
			install("/o/lib/nvidia-smi", "/opt/drakit/lib/nvidia-smi", "0755"),
			{Argv: []string{"/opt/drakit/bin/drakit", "emulator", "render", "--profile", "dgx-a100-mig",
				"--uuid-seed", "drakit-worker", "--root", "/var/lib/drakit/emulator",
				"--shim", "/opt/drakit/lib/libnvidia-ml.so", "--nvidia-smi", "/opt/drakit/lib/nvidia-smi"}},
		},
	}, {
		name: "profile file, explicit seed and nvidia-smi",
		node: "k-worker2",
		opts: RenderOptions{ProfileFile: "/p/node.yaml", UUIDSeed: "seed", Drakit: "/d", Shim: "/s.so", NvidiaSMI: "/x/smi"},
		want: []NodeCommand{
			install("/d", "/opt/drakit/bin/drakit", "0755"),
			install("/p/node.yaml", "/opt/drakit/share/profile.yaml", "0644"),
			install("/s.so", "/opt/drakit/lib/libnvidia-ml.so", "0755"),
			install("/x/smi", "/opt/drakit/lib/nvidia-smi", "0755"),
			{Argv: []string{"/opt/drakit/bin/drakit", "emulator", "render", "--profile", "/opt/drakit/share/profile.yaml",
				"--uuid-seed", "seed", "--root", "/var/lib/drakit/emulator",
				"--shim", "/opt/drakit/lib/libnvidia-ml.so", "--nvidia-smi", "/opt/drakit/lib/nvidia-smi"}},
		},
	}, {
		name: "no shim: no NVML library",
		node: "n",
		opts: RenderOptions{Profile: "nic-only", Drakit: "/d"},
		want: []NodeCommand{
			install("/d", "/opt/drakit/bin/drakit", "0755"),
			{Argv: []string{"/opt/drakit/bin/drakit", "emulator", "render", "--profile", "nic-only",
				"--uuid-seed", "n", "--root", "/var/lib/drakit/emulator"}},
		},
	}, {
		name: "cluster profile name: the node of the kind node's name",
		node: "drakit-worker3",
		opts: RenderOptions{ClusterProfile: "conformance-fabric-kind", Drakit: "/d"},
		want: []NodeCommand{
			install("/d", "/opt/drakit/bin/drakit", "0755"),
			{Argv: []string{"/opt/drakit/bin/drakit", "emulator", "render", "--cluster-profile", "conformance-fabric-kind",
				"--node", "drakit-worker3", "--root", "/var/lib/drakit/emulator"}},
		},
	}, {
		name: "cluster profile file, installed in the node",
		node: "drakit-control-plane",
		opts: RenderOptions{ClusterProfileFile: "/p/cluster.yaml", Drakit: "/d", Shim: "/s.so"},
		want: []NodeCommand{
			install("/d", "/opt/drakit/bin/drakit", "0755"),
			install("/p/cluster.yaml", "/opt/drakit/share/cluster-profile.yaml", "0644"),
			install("/s.so", "/opt/drakit/lib/libnvidia-ml.so", "0755"),
			install("/nvidia-smi", "/opt/drakit/lib/nvidia-smi", "0755"),
			{Argv: []string{"/opt/drakit/bin/drakit", "emulator", "render", "--cluster-profile", "/opt/drakit/share/cluster-profile.yaml",
				"--node", "drakit-control-plane", "--root", "/var/lib/drakit/emulator",
				"--shim", "/opt/drakit/lib/libnvidia-ml.so", "--nvidia-smi", "/opt/drakit/lib/nvidia-smi"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderCommands(tc.node, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RenderCommands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderCommandsRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		node string
		opts RenderOptions
		want string
	}{
		"no node":          {"", RenderOptions{Profile: "p", Drakit: "/d"}, "node: required"},
		"no profile":       {"n", RenderOptions{Drakit: "/d"}, "profile: exactly one"},
		"two profiles":     {"n", RenderOptions{Profile: "p", ProfileFile: "/f", Drakit: "/d"}, "profile: exactly one"},
		"node and cluster": {"n", RenderOptions{Profile: "p", ClusterProfile: "c", Drakit: "/d"}, "profile: exactly one"},
		"seeded cluster":   {"n", RenderOptions{ClusterProfile: "c", UUIDSeed: "s", Drakit: "/d"}, "uuidSeed: not with a cluster profile"},
		"no drakit":        {"n", RenderOptions{Profile: "p"}, "drakit: required"},
		"smi without shim": {"n", RenderOptions{Profile: "p", Drakit: "/d", NvidiaSMI: "/s"}, "nvidiaSMI: needs shim"},
	} {
		if _, err := RenderCommands(tc.node, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: RenderCommands = %v, want an error with %q", name, err, tc.want)
		}
	}
}

// The install script run by sh copies its standard input to $1 with mode
// $2: checked with the host's sh on a temporary directory.
func TestInstallScriptCopies(t *testing.T) {
	dir := t.TempDir()
	src := dir + "/src"
	dst := dir + "/a/b/dst"
	writeFile(t, src, "payload\n")
	c := installCommand(src, dst, "0750")
	runLocal(t, c)
	if got := readFile(t, dst); got != "payload\n" {
		t.Errorf("installed %q, want payload", got)
	}
	if mode := fileMode(t, dst); mode != 0o750 {
		t.Errorf("mode %o, want 750", mode)
	}
}
