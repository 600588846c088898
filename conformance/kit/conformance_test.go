package kit

import (
	"os"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/conformance/report"
)

// TestConformance certifies the reference driver (its declaration,
// docs/examples/reference-driver.yaml) on a running cluster. It runs only
// when DRAKIT_KUBECONFIG points at the cluster's kubeconfig, for example
// after `eval "$(drakit env status -o env)"` with the reference driver
// deployed; DRAKIT_CDI_DIR and DRAKIT_KUBELET_ROOT_DIR enable the node-side
// checks, ARTIFACTS keeps the
// reports. Every scenario runs as a subtest.
func TestConformance(t *testing.T) {
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("no cluster: set DRAKIT_KUBECONFIG to the kubeconfig of a cluster with the driver deployed " +
			"(make cluster-up, drakit emulator render, drakit driver deploy, then eval \"$(drakit env status -o env)\"), " +
			"optionally DRAKIT_CDI_DIR to the node's CDI directory and ARTIFACTS to keep the reports")
	}
	cfg := referenceDriverConfig()
	cfg.Kubeconfig = kubeconfig
	cfg.NodeCDIDir = os.Getenv("DRAKIT_CDI_DIR")
	cfg.NodeKubeletRootDir = os.Getenv("DRAKIT_KUBELET_ROOT_DIR")
	cfg.ArtifactsDir = os.Getenv("ARTIFACTS")
	if cfg.ArtifactsDir == "" {
		cfg.ArtifactsDir = t.TempDir()
	}
	cfg.TestingT = t
	_, ctx := ktesting.NewTestContext(t)
	v, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("conformance run: %v", err)
	}
	if v.Outcome != report.Conformant {
		t.Errorf("conformance: %s; see %s", v.Line(), cfg.ArtifactsDir)
	}
}
