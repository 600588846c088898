package kit_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

// TestEmbeddedFeaturesAgainstFakeCluster runs the real features against a
// fake cluster that has the driver's DeviceClass and a ResourceSlice but no
// scheduler or kubelet. Most scenarios cannot pass there; the test checks
// that every step copes (no panics, every scenario reported) and that
// cleanup leaves no namespace or claim behind.
func TestEmbeddedFeaturesAgainstFakeCluster(t *testing.T) {
	t.Parallel()
	kube := kit.FakeClusterForTest(t)
	ctx := context.Background()
	if _, err := kube.ResourceV1().DeviceClasses().Create(ctx, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: kit.TestDriver}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := kit.SliceForTest("node-gpus", kit.TestDriver, "127.0.0.1", "127.0.0.1", 1, kit.GPUForTest("gpu-0", "GPU-0", 0), kit.GPUForTest("gpu-1", "GPU-1", 0))
	if _, err := kube.ResourceV1().ResourceSlices().Create(ctx, &s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := kit.ConfigForTest(t)
	cfg.Declaration.Scenarios = nil // every scenario, not the reference driver's share
	cfg.Concurrency = 4
	cfg.Timeouts = kit.Timeouts{API: time.Second, Publish: 200 * time.Millisecond, PodStart: 200 * time.Millisecond, PodDelete: 200 * time.Millisecond, Cleanup: 500 * time.Millisecond, SchedulerBinding: time.Second, FaultCommand: time.Second}
	cfg.Output = &bytes.Buffer{}
	res, err := kit.RunForTest(ctx, cfg, kube, features.FS, conformance.Steps)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if os.Getenv("DRAKIT_SHOW_OUTPUT") != "" {
		t.Logf("output:\n%s", cfg.Output)
	}
	if got, want := res.Total(), kit.CountPicklesForTest(t); got != want {
		t.Errorf("%d scenarios reported, the features have %d", got, want)
	}
	for _, sr := range res.Scenarios {
		if strings.Contains(sr.Message, "panic") || strings.Contains(sr.Message, "runtime error") {
			t.Errorf("%s:%d %s: %s", sr.URI, sr.Line, sr.Name, sr.Message)
		}
		if sr.Status == report.StatusUndefined || sr.Status == report.StatusPending {
			t.Errorf("%s:%d %s is %s", sr.URI, sr.Line, sr.Name, sr.Status)
		}
	}
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(nss.Items) != 0 {
		t.Errorf("namespaces left: %d (err %v)", len(nss.Items), err)
	}
	claims, err := kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 0 {
		t.Errorf("claims left: %d (err %v)", len(claims.Items), err)
	}
}
