package driver

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
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// runConfig is a driver configuration below one temporary directory.
func runConfig(t *testing.T, root *testRoot) Config {
	t.Helper()
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName = testNode
	cfg.DriverRoot = root.dir
	cfg.KubeletRegistrarDir = filepath.Join(base, "registry")
	cfg.KubeletPluginDir = filepath.Join(base, "plugins", testDriver)
	cfg.CDIDir = filepath.Join(base, "cdi")
	mkdir(t, cfg.KubeletRegistrarDir)
	return cfg
}

// TestRunServesKubelet drives the driver the way the kubelet does: through
// the registration socket and the DRA gRPC socket.
func TestRunServesKubelet(t *testing.T) {
	t.Parallel()
	root := newTestRoot(t, 0, 1, 3)
	cfg := runConfig(t, root)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	claim := harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "gpu", "gpu-3"))
	client := harnesstest.NewFakeClient(node, claim)
	stop, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error {
		return run(ctx, cfg, client, staticDiscoverer{testInventory()}, root.lib, nil, newFakeFaults().opener())
	})
	ctx := t.Context()

	// The pool is published.
	slices := harnesstest.WaitForSlices(t, ctx, client, errc, 50*time.Millisecond)
	if len(slices.Items) != 1 {
		t.Fatalf("%d ResourceSlices, want 1", len(slices.Items))
	}
	s := slices.Items[0]
	var names []string
	for _, d := range s.Spec.Devices {
		names = append(names, d.Name)
	}
	type sliceSummary struct {
		Driver, Node, Pool string
		Owner              string
		Devices            []string
	}
	gotSummary := sliceSummary{s.Spec.Driver, *s.Spec.NodeName, s.Spec.Pool.Name, "", names}
	if len(s.OwnerReferences) == 1 {
		gotSummary.Owner = s.OwnerReferences[0].Kind + "/" + s.OwnerReferences[0].Name + "/" + string(s.OwnerReferences[0].UID)
	}
	wantSummary := sliceSummary{testDriver, testNode, testNode, "Node/" + testNode + "/node-uid", []string{"gpu-0", "gpu-1", "gpu-3"}}
	if diff := cmp.Diff(wantSummary, gotSummary); diff != "" {
		t.Errorf("ResourceSlice (-want +got):\n%s", diff)
	}

	// Registration, as the kubelet's plugin watcher sees it.
	reg := registerapi.NewRegistrationClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletRegistrarDir, testDriver+"-reg.sock")))
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	gotInfo := []string{info.Type, info.Name, info.Endpoint, strings.Join(info.SupportedVersions, ",")}
	wantInfo := []string{"DRAPlugin", testDriver, filepath.Join(cfg.KubeletPluginDir, "dra.sock"), "v1.DRAPlugin,v1beta1.DRAPlugin,v1.DRAResourceHealth,v1alpha1.DRAResourceHealth"}
	if diff := cmp.Diff(wantInfo, gotInfo); diff != "" {
		t.Errorf("registration info (-want +got):\n%s", diff)
	}

	// Prepare and unprepare over gRPC.
	dra := drapbv1.NewDRAPluginClient(harnesstest.Dial(t, info.Endpoint))
	pbClaim := &drapbv1.Claim{Namespace: "test", Name: "one", Uid: uidA}
	prep, err := dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := prep.Claims[uidA]
	if r == nil || r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("NodePrepareResources response %v, want one device and no error", prep)
	}
	gotDev := []string{strings.Join(r.Devices[0].RequestNames, ","), r.Devices[0].PoolName, r.Devices[0].DeviceName, strings.Join(r.Devices[0].CdiDeviceIds, ",")}
	wantDev := []string{"gpu", testNode, "gpu-3", "k8s.gpu.drakit.dev/claim=" + uidA + "-gpu-3"}
	if diff := cmp.Diff(wantDev, gotDev); diff != "" {
		t.Errorf("prepared device (-want +got):\n%s", diff)
	}
	spec := filepath.Join(cfg.CDIDir, "k8s.gpu.drakit.dev-claim_"+uidA+".json")
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("CDI spec after prepare: %v", err)
	}
	unprepareClaim(ctx, t, dra, pbClaim)
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

type failingDiscoverer struct{}

func (failingDiscoverer) Discover(context.Context) (*Inventory, error) {
	return nil, errors.New("initialize NVML: Driver Not Loaded")
}

func TestRunStartupErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		disc    Discoverer
		wantErr string
	}{
		{"invalid config", func(c *Config) { c.NodeName = "" }, staticDiscoverer{testInventory()}, "NodeName is required"},
		{"no registrar dir", func(c *Config) { c.KubeletRegistrarDir = "/nonexistent/plugins_registry" }, staticDiscoverer{testInventory()},
			"find kubelet registrar directory /nonexistent/plugins_registry: not a directory"},
		{"discovery fails", func(*Config) {}, failingDiscoverer{}, "discover GPUs: initialize NVML: Driver Not Loaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newTestRoot(t)
			cfg := runConfig(t, root)
			tc.mutate(&cfg)
			err := run(t.Context(), cfg, harnesstest.NewFakeClient(), tc.disc, root.lib, nil, newFakeFaults().opener())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// unprepareClaim asks the driver to unprepare claim and fails t unless its
// answer has an entry for the claim without error.
func unprepareClaim(ctx context.Context, t *testing.T, dra drapbv1.DRAPluginClient, claim *drapbv1.Claim) {
	t.Helper()
	unprep, err := dra.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: []*drapbv1.Claim{claim}})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	if r := unprep.Claims[claim.Uid]; r == nil || r.Error != "" {
		t.Errorf("NodeUnprepareResources response %v, want an entry without error", unprep)
	}
}
