package kind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
)

// TestKindEndToEnd creates a kind cluster from kind/cluster.yaml with the
// offline node image, renders the emulated hardware in its worker, loads
// the probe image, deploys the reference GPU driver, waits for its
// ResourceSlices and deletes the cluster. It needs a Docker daemon
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
	deployReferenceDriver(ctx, t, p, output)
}

// deployReferenceDriver loads the driver image, deploys the reference GPU
// driver with drakit driver deploy (its hostNetwork pod reaches the API
// server at the control plane's address on the kind network) and waits for
// the worker's ResourceSlices: the driver read the hardware rendered in the
// node.
func deployReferenceDriver(ctx context.Context, t *testing.T, p *Provider, output string) {
	t.Helper()
	if err := p.LoadImageArchive(ctx, filepath.Join(output, "images", "driver.tar"), "drakit-e2e-worker"); err != nil {
		t.Fatalf("LoadImageArchive driver: %v", err)
	}
	cp, err := p.nodes([]string{"drakit-e2e-control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	ip, _, err := cp[0].IP()
	if err != nil {
		t.Fatal(err)
	}
	deploy := exec.CommandContext(ctx, filepath.Join(output, "bin", "drakit"), "driver", "deploy",
		"--kubeconfig", p.GetKubeconfig(), "--apiserver-host", ip, "--apiserver-port", "6443", "--timeout", "3m",
		// Only the worker has rendered hardware and the driver image; the
		// DaemonSet would also run on the control plane.
		"--node", "drakit-e2e-worker")
	if out, err := deploy.CombinedOutput(); err != nil {
		t.Fatalf("drakit driver deploy: %v\n%s", err, out)
	}
	cs, err := kubernetes.NewForConfig(p.KubernetesRestConfig())
	if err != nil {
		t.Fatal(err)
	}
	devices := 0
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		devices = 0
		for _, s := range slices.Items {
			if s.Spec.Driver == "gpu.drakit.dev" && s.Spec.NodeName != nil && *s.Spec.NodeName == "drakit-e2e-worker" {
				devices += len(s.Spec.Devices)
			}
		}
		return devices > 0, nil
	})
	if err != nil {
		t.Fatalf("no gpu.drakit.dev devices published for drakit-e2e-worker: %v", err)
	}
	t.Logf("gpu.drakit.dev publishes %d devices on drakit-e2e-worker", devices)
}
