package emulator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drakit.dev/drakit/emulator/clusterprofile"
	"drakit.dev/drakit/emulator/render"
)

func TestEmulatorClusterProfileShowCheck(t *testing.T) {
	out, err := runEmulator(t, "cluster-profile", "show", "conformance-fabric")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4 nodes, 16 GPUs, 16 TPU chips, 1 racks, 2 NVLink cliques, 1 TPU slices",
		"127.0.0.3  local  local  gb200-tpu-v5p-node  4     5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c.2  torus-a/2",
		"torus-a: v5p 2x2x4, hosts of 2x2x1 in worker order: 127.0.0.1, 127.0.0.2, 127.0.0.3, 127.0.0.4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show does not print %q:\n%s", want, out)
		}
	}
	if out, err := runEmulator(t, "cluster-profile", "check", "scale-1000"); err != nil || !strings.Contains(out, "1000 nodes, 3928 GPUs, 128 TPU chips") {
		t.Errorf("check scale-1000: %v\n%s", err, out)
	}
	_, err = runEmulator(t, "cluster-profile", "check", "../../../../emulator/clusterprofile/testdata/invalid-unknown-node.yaml")
	if !errors.Is(err, clusterprofile.ErrInvalid) || !strings.Contains(err.Error(), `spec.nvlinkDomains[0].cliques[1].nodes[2]: Not found: "rack-3-node-19"`) {
		t.Errorf("check of an invalid file: %v", err)
	}
}

func TestEmulatorRenderFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--root", "/tmp/x"},
		{"--profile", "dgx-h100", "--cluster-profile", "nvl72", "--root", "/tmp/x"},
		{"--profile", "dgx-h100", "--node", "a", "--root", "/tmp/x"},
		{"--cluster-profile", "nvl72", "--root", "/tmp/x"},
		{"--cluster-profile", "nvl72", "--node", "a", "--all", "--out", "/tmp/x"},
		{"--cluster-profile", "nvl72", "--all", "--root", "/tmp/x"},
		{"--cluster-profile", "nvl72", "--node", "nvl72-node-00"},
		{"--cluster-profile", "nvl72", "--node", "nvl72-node-00", "--uuid-seed", "x", "--root", "/tmp/x"},
	} {
		if _, err := runEmulator(t, append([]string{"render"}, args...)...); !errors.Is(err, errRenderFlags) {
			t.Errorf("render %v: %v, want errRenderFlags", args, err)
		}
	}
	_, err := runEmulator(t, "render", "--cluster-profile", "nvl72", "--node", "nope", "--root", t.TempDir())
	if !errors.Is(err, clusterprofile.ErrUnknownNode) {
		t.Errorf("render of an unknown node: %v", err)
	}
}

func TestEmulatorRenderClusterNode(t *testing.T) {
	root := filepath.Join(t.TempDir(), "emu")
	out, err := runEmulator(t, "render", "--cluster-profile", "conformance-fabric", "--node", "127.0.0.2", "--root", root)
	if errors.Is(err, render.ErrDeviceNodes) {
		t.Skipf("render needs mknod (root or CAP_MKNOD): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "rendered node 127.0.0.2 of conformance-fabric (4× NVIDIA GB200") {
		t.Errorf("render printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(root, "dev", "nvidia3")); err != nil {
		t.Errorf("node 127.0.0.2 has no fourth GPU: %v", err)
	}
	all := filepath.Join(t.TempDir(), "all")
	out, err = runEmulator(t, "render", "--cluster-profile", "conformance-fabric", "--all", "--out", all)
	if err != nil || !strings.Contains(out, "rendered 4 nodes of conformance-fabric into "+all) {
		t.Fatalf("render --all: %v\n%s", err, out)
	}
	for _, n := range []string{"127.0.0.1", "127.0.0.4"} {
		if _, err := os.Stat(filepath.Join(all, n, "dev", "nvidia0")); err != nil {
			t.Errorf("node %s not rendered: %v", n, err)
		}
	}
}
