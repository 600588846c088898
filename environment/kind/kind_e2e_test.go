package kind

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestKindEndToEnd creates a kind cluster from kind/cluster.yaml with the
// offline node image, renders the emulated hardware in its worker, loads
// the probe image and deletes the cluster. It needs a Docker daemon
// (DOCKER_HOST) and the node image (scripts/kind-node-image.sh), so it runs
// only with DRAKIT_KIND=1; DRAKIT_KIND_IMAGE names the node image and
// DRAKIT_KIND_OUTPUT the build's _output directory (default ../../_output).
func TestKindEndToEnd(t *testing.T) {
	if os.Getenv("DRAKIT_KIND") != "1" {
		t.Skip("DRAKIT_KIND=1 runs the kind lane (needs Docker and the node image)")
	}
	image := os.Getenv("DRAKIT_KIND_IMAGE")
	if image == "" {
		image = "drakit.dev/kind-node:v1.37.2"
	}
	output := os.Getenv("DRAKIT_KIND_OUTPUT")
	if output == "" {
		output = "../../_output"
	}
	output, err := filepath.Abs(output)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	state := t.TempDir()
	p := NewProvider()
	p.WithName("drakit-e2e").WithOpts(WithConfig(ConfigOptions{NodeImage: image, Workers: 1, StateDir: state, Offline: true}))
	if _, err := p.Create(ctx); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if dir := os.Getenv("DRAKIT_KIND_LOGS"); dir != "" {
			if err := p.ExportLogs(context.Background(), dir); err != nil {
				t.Errorf("ExportLogs: %v", err)
			}
		}
		if err := p.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	names, err := p.NodeNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[1] != "drakit-e2e-worker" {
		t.Fatalf("NodeNames = %v, want the control plane and drakit-e2e-worker", names)
	}
	if err := p.RenderNode(ctx, "drakit-e2e-worker", RenderOptions{
		Profile: "dgx-a100-mig", Drakit: filepath.Join(output, "bin", "drakit"), Shim: filepath.Join(output, "lib", "libnvidia-ml.so"),
	}); err != nil {
		t.Fatalf("RenderNode: %v", err)
	}
	// Ground truth from the host side of the node's emulator root mount:
	// the character device the render created inside the node.
	fi, err := os.Stat(filepath.Join(StateDirs(state, "drakit-e2e-worker").Emulator, "dev", "nvidiactl"))
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("rendered /dev/nvidiactl: %v (mode %v)", err, fi)
	}
	if err := p.RunOnNode(ctx, "drakit-e2e-worker", []string{"test", "-c", EmulatorRoot + "/dev/nvidia0"}); err != nil {
		t.Errorf("GPU device node in the node: %v", err)
	}
	if err := p.LoadImageArchive(ctx, filepath.Join(output, "images", "probe.tar")); err != nil {
		t.Fatalf("LoadImageArchive: %v", err)
	}
	if err := p.RunOnNode(ctx, "drakit-e2e-worker", []string{"sh", "-c", "ctr -n k8s.io images ls -q | grep -q drakit.dev/probe"}); err != nil {
		t.Errorf("probe image not in the worker's containerd: %v", err)
	}
}
