package nri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/render"
)

// newRoot is an emulator root with the shim (libnvidia-ml.so.1 -> the
// versioned file) and, with state, an NVML state file.
func newRoot(t *testing.T, state bool) string {
	t.Helper()
	root := t.TempDir()
	lib := filepath.Join(root, render.LibraryDir)
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "libnvidia-ml.so.570.172.08"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libnvidia-ml.so.570.172.08", filepath.Join(lib, "libnvidia-ml.so.1")); err != nil {
		t.Fatal(err)
	}
	if state {
		p := filepath.Join(root, nvmlstate.RelativePath)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("drakit-nvml-state v2\nend\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func container(devices []*api.LinuxDevice, mounts ...string) *api.Container {
	c := &api.Container{Name: "probe", Linux: &api.LinuxContainer{Devices: devices}}
	for _, m := range mounts {
		c.Mounts = append(c.Mounts, &api.Mount{Destination: m, Source: "/elsewhere", Type: "bind"})
	}
	return c
}

func dev(typ string, major, minor int64) *api.LinuxDevice {
	return &api.LinuxDevice{Path: "/dev/x", Type: typ, Major: major, Minor: minor}
}

func TestAdjust(t *testing.T) {
	root := newRoot(t, true)
	lib := filepath.Join(root, render.LibraryDir, "libnvidia-ml.so.570.172.08")
	stateDir := filepath.Join(root, "run", "drakit-emulator")
	for _, tc := range []struct {
		name string
		ctr  *api.Container
		want map[string]string // destination → source; nil: no adjustment
	}{
		{name: "no devices", ctr: container(nil)},
		{name: "another major", ctr: container([]*api.LinuxDevice{dev("c", 231, 192)})},
		{name: "nvidiactl alone", ctr: container([]*api.LinuxDevice{dev("c", 195, 255)})},
		{name: "nvidia-modeset alone", ctr: container([]*api.LinuxDevice{dev("c", 195, 254)})},
		{name: "block device of the NVIDIA major", ctr: container([]*api.LinuxDevice{dev("b", 195, 0)})},
		{name: "a GPU", ctr: container([]*api.LinuxDevice{dev("c", 195, 255), dev("c", 195, 3)}),
			want: map[string]string{containerLibrary: lib, containerStateDir: stateDir}},
		{name: "a GPU whose library the driver mounts", ctr: container([]*api.LinuxDevice{dev("c", 195, 0)}, containerLibrary),
			want: map[string]string{containerStateDir: stateDir}},
		{name: "a GPU with both mounted (the reference driver)", ctr: container([]*api.LinuxDevice{dev("c", 195, 0)}, containerLibrary, containerStateDir+"/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adj, err := (&Plugin{Root: root}).Adjust(tc.ctr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if adj != nil {
					t.Fatalf("got adjustment %v, want none", adj)
				}
				return
			}
			got := map[string]string{}
			for _, m := range adj.GetMounts() {
				got[m.Destination] = m.Source
				if m.Type != "bind" || !contains(m.Options, "ro") || !contains(m.Options, "rbind") {
					t.Errorf("mount %s: type %q options %v, want a read-only bind mount", m.Destination, m.Type, m.Options)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got mounts %v, want %v", got, tc.want)
			}
			for d, s := range tc.want {
				if got[d] != s {
					t.Errorf("mount at %s: source %q, want %q", d, got[d], s)
				}
			}
		})
	}
}

func TestAdjustWithoutState(t *testing.T) {
	adj, err := (&Plugin{Root: newRoot(t, false)}).Adjust(container([]*api.LinuxDevice{dev("c", 195, 0)}))
	if err != nil || adj != nil {
		t.Fatalf("a root without NVML state: got %v, %v; want no adjustment", adj, err)
	}
}

func TestAdjustWithoutShim(t *testing.T) {
	root := newRoot(t, true)
	if err := os.Remove(filepath.Join(root, render.LibraryDir, "libnvidia-ml.so.570.172.08")); err != nil {
		t.Fatal(err)
	}
	_, err := (&Plugin{Root: root}).Adjust(container([]*api.LinuxDevice{dev("c", 195, 0)}))
	if err == nil || !strings.Contains(err.Error(), "NVML shim") {
		t.Fatalf("got %v, want an error about the NVML shim", err)
	}
	// The hook itself never fails a container for it.
	adj, upd, err := (&Plugin{Root: root}).CreateContainer(context.Background(), &api.PodSandbox{}, container([]*api.LinuxDevice{dev("c", 195, 0)}))
	if adj != nil || upd != nil || err != nil {
		t.Fatalf("CreateContainer: got %v, %v, %v; want nothing", adj, upd, err)
	}
}

func TestRunRefusesRelativeRoot(t *testing.T) {
	if err := Run(context.Background(), &Plugin{Root: "emulator"}); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Fatalf("got %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestSynchronizeMarksReady(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	if _, err := (&Plugin{Root: "/r", ReadyFile: ready}).Synchronize(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ready); err != nil {
		t.Errorf("no ready file after Synchronize: %v", err)
	}
	if upd, err := (&Plugin{Root: "/r"}).Synchronize(context.Background(), nil, nil); upd != nil || err != nil {
		t.Errorf("without a ready file: got %v, %v", upd, err)
	}
}
