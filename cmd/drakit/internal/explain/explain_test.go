package explain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
	"drakit.dev/drakit/oracle/allocator/scenario"
)

func runExplainCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	cmd.SetArgs(args)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestExplainCommandRejectsBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"node x/y":                        "explain node: want claim or pod",
		"claim nons":                      `explain claim "nons": want NAMESPACE/NAME`,
		"pod a/b/c":                       `explain pod "a/b/c": want NAMESPACE/NAME`,
		"claim /name":                     `explain claim "/name": want NAMESPACE/NAME`,
		"claim a/b --save-scenario /tmp/": `--save-scenario "/tmp/": want a file`,
	} {
		_, err := runExplainCommand(t, strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("explain %s: %v, want an error containing %q", args, err, want)
		}
	}
}

// TestIntegrationExplain explains, on the live local cluster with the
// reference driver deployed (DRAKIT_KUBECONFIG), a claim for more GPUs than
// the node has: the reference allocator proves it does not fit and names
// the request and the count; the saved scenario replays.
func TestIntegrationExplain(t *testing.T) {
	kubeconfig := os.Getenv("DRAKIT_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("no cluster: set DRAKIT_KUBECONFIG to the local cluster's kubeconfig with the reference driver deployed (make conformance runs this test)")
	}
	kube, err := cli.BindKubeFlags(pflag.NewFlagSet("explain", pflag.ContinueOnError)).ValidatedClient(func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drakit-explain-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "twenty"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.drakit.dev", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 20},
		}}}}}
	if _, err := kube.ResourceV1().ResourceClaims(ns.Name).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "state.yaml")
	out, err := runExplainCommand(t, "claim", ns.Name+"/twenty", "--kubeconfig", kubeconfig, "--save-scenario", saved)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	for _, want := range []string{"finds an allocation on 0 of 1 nodes", "node 127.0.0.1: does not fit", "request gpus: needs 20"} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
	if _, err := scenario.Load(saved); err != nil {
		t.Errorf("the saved scenario does not load: %v", err)
	}
	t.Logf("drakit explain said:\n%s", out)
}
