package plaindriver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// runConfig is a driver configuration below one temporary directory.
func runConfig(t *testing.T, defect Defect) Config {
	t.Helper()
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName = testNode
	cfg.Defect = defect
	cfg.StateDir = filepath.Join(base, "state")
	cfg.KubeletRegistrarDir = filepath.Join(base, "registry")
	cfg.KubeletPluginDir = filepath.Join(base, "plugins", testDriver)
	cfg.CDIDir = filepath.Join(base, "cdi")
	if err := os.MkdirAll(cfg.KubeletRegistrarDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRunServesKubelet drives the driver the way the kubelet does: the
// slice it publishes, registration, and prepare and unprepare over gRPC.
func TestRunServesKubelet(t *testing.T) {
	t.Parallel()
	cfg := runConfig(t, "")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	claim := claimOf("two", uidA, "dev-1", "dev-3")
	client := harnesstest.NewFakeClient(node, claim)
	stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error { return run(ctx, cfg, client, time.Hour) })

	slices := harnesstest.WaitForSlices(t, t.Context(), client, errc, 20*time.Millisecond)
	if len(slices.Items) != 1 {
		t.Fatalf("%d ResourceSlices, want 1", len(slices.Items))
	}
	s := slices.Items[0]
	var names []string
	for _, d := range s.Spec.Devices {
		names = append(names, d.Name)
	}
	type summary struct {
		Driver, Node, Pool, Owner string
		Devices                   []string
	}
	got := summary{s.Spec.Driver, *s.Spec.NodeName, s.Spec.Pool.Name, "", names}
	if len(s.OwnerReferences) == 1 {
		got.Owner = s.OwnerReferences[0].Kind + "/" + s.OwnerReferences[0].Name + "/" + string(s.OwnerReferences[0].UID)
	}
	want := summary{testDriver, testNode, testNode, "Node/" + testNode + "/node-uid", []string{"dev-0", "dev-1", "dev-2", "dev-3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResourceSlice (-want +got):\n%s", diff)
	}

	reg := registerapi.NewRegistrationClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletRegistrarDir, testDriver+"-reg.sock")))
	info, err := reg.GetInfo(t.Context(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	gotInfo := []string{info.Type, info.Name, info.Endpoint}
	wantInfo := []string{"DRAPlugin", testDriver, filepath.Join(cfg.KubeletPluginDir, "dra.sock")}
	if diff := cmp.Diff(wantInfo, gotInfo); diff != "" {
		t.Errorf("registration info (-want +got):\n%s", diff)
	}

	dra := drapbv1.NewDRAPluginClient(harnesstest.Dial(t, info.Endpoint))
	pbClaim := &drapbv1.Claim{Namespace: "test", Name: "two", Uid: uidA}
	prep, err := dra.NodePrepareResources(t.Context(), &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := prep.Claims[uidA]
	if r == nil || r.Error != "" {
		t.Fatalf("NodePrepareResources response %v, want devices and no error", prep)
	}
	var gotDevs []string
	for _, d := range r.Devices {
		gotDevs = append(gotDevs, d.PoolName+"/"+d.DeviceName+" "+strings.Join(d.CdiDeviceIds, ","))
	}
	wantDevs := []string{
		testNode + "/dev-1 k8s.plain.drakit.dev/claim=" + uidA + "-dev-1",
		testNode + "/dev-3 k8s.plain.drakit.dev/claim=" + uidA + "-dev-3",
	}
	if diff := cmp.Diff(wantDevs, gotDevs); diff != "" {
		t.Errorf("prepared devices (-want +got):\n%s", diff)
	}
	spec := filepath.Join(cfg.CDIDir, "k8s.plain.drakit.dev-claim_"+uidA+".json")
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("CDI spec after prepare: %v", err)
	}
	unprep, err := dra.NodeUnprepareResources(t.Context(), &drapbv1.NodeUnprepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	if r := unprep.Claims[uidA]; r == nil || r.Error != "" {
		t.Errorf("NodeUnprepareResources response %v, want an entry without error", unprep)
	}
	if _, err := os.Stat(spec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CDI spec after unprepare still exists (stat: %v)", err)
	}

	if err := stop(); err != nil {
		t.Errorf("run after cancel: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.KubeletRegistrarDir, testDriver+"-reg.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registration socket left behind after stop (stat: %v)", err)
	}
}

// TestRunDuplicateDeviceNames: with the defect the driver serves the
// kubelet but publishes no slice, and logs why again at every republish.
func TestRunDuplicateDeviceNames(t *testing.T) {
	t.Parallel()
	cfg := runConfig(t, DefectDuplicateDeviceNames)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	client := harnesstest.NewFakeClient(node)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(t.Context(), logger)
	buffer := logger.GetSink().(ktesting.Underlier).GetBuffer()
	stop, errc := harnesstest.StartRun(t, ctx, func(ctx context.Context) error { return run(ctx, cfg, client, 20*time.Millisecond) })

	const refusal = `found duplicate device \"dev-0\" in pool \"127.0.0.1\"`
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(buffer.String(), refusal) < 3 {
		select {
		case err := <-errc:
			t.Fatalf("run returned: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusal was not logged three times in 30s; log:\n%s", buffer.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`Running with a deliberate defect, for the conformance kit to catch defect="duplicate-device-names"`, "pool validation failed"} {
		if !strings.Contains(buffer.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buffer.String())
		}
	}
	slices, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 0 {
		t.Errorf("%d ResourceSlices published, want none", len(slices.Items))
	}
	reg := registerapi.NewRegistrationClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletRegistrarDir, testDriver+"-reg.sock")))
	if _, err := reg.GetInfo(t.Context(), &registerapi.InfoRequest{}); err != nil {
		t.Errorf("the driver does not register: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}

func TestRunStartupErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"invalid config", func(c *Config) { c.NodeName = "" }, "NodeName is required"},
		{"no registrar dir", func(c *Config) { c.KubeletRegistrarDir = "/nonexistent/plugins_registry" },
			"find kubelet registrar directory /nonexistent/plugins_registry: not a directory"},
		{"corrupt checkpoint", func(c *Config) {
			if err := os.MkdirAll(c.StateDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(c.StateDir, "checkpoint.json"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "corrupt checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := runConfig(t, "")
			tc.mutate(&cfg)
			err := run(t.Context(), cfg, harnesstest.NewFakeClient(), time.Hour)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
