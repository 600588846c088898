package nicdriver

import (
	"context"
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

// runEnv is newEnv with a kubelet registration directory.
func runEnv(t *testing.T) *testEnv {
	t.Helper()
	e := newEnv(t)
	e.cfg.KubeletRegistrarDir = filepath.Join(t.TempDir(), "registry")
	if err := os.MkdirAll(e.cfg.KubeletRegistrarDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRunServesKubelet drives the driver the way the kubelet does: it
// publishes the pool, registers, prepares a claim with a VF and a share
// over gRPC (the share's ID comes back), writes the claim's status and
// undoes it all at unprepare.
func TestRunServesKubelet(t *testing.T) {
	t.Parallel()
	e := runEnv(t)
	e.cfg.DeviceStatus = true
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	claim := harnesstest.AllocatedClaim("one", uidA, vfResult("vf", pf0Dv+"-vf0"), shareResult("net", pf0Dv, share1, "10G"))
	client := harnesstest.NewFakeClient(node, claim)
	e.client = client
	ctx := t.Context()
	stop, errc := harnesstest.StartRun(t, ctx, func(ctx context.Context) error { return run(ctx, e.cfg, client) })

	slices := harnesstest.WaitForSlices(t, ctx, client, errc, 20*time.Millisecond)
	if len(slices.Items) != 1 || slices.Items[0].Spec.Driver != DefaultDriverName || slices.Items[0].Spec.Pool.Name != testNode ||
		len(slices.Items[0].Spec.Devices) != 12 {
		t.Fatalf("ResourceSlices %+v, want one of %s with 12 devices", slices.Items, DefaultDriverName)
	}

	reg := registerapi.NewRegistrationClient(harnesstest.Dial(t, filepath.Join(e.cfg.KubeletRegistrarDir, DefaultDriverName+"-reg.sock")))
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.Name != DefaultDriverName || info.Endpoint != filepath.Join(e.cfg.KubeletPluginDir, "dra.sock") {
		t.Errorf("registration info %v", info)
	}
	dra := drapbv1.NewDRAPluginClient(harnesstest.Dial(t, info.Endpoint))
	pbClaim := &drapbv1.Claim{Namespace: "test", Name: "one", Uid: uidA}
	prep, err := dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := prep.Claims[uidA]
	if r == nil || r.Error != "" || len(r.Devices) != 2 {
		t.Fatalf("NodePrepareResources response %v, want two devices and no error", prep)
	}
	var got [][]string
	for _, d := range r.Devices {
		got = append(got, []string{d.DeviceName, strings.Join(d.CdiDeviceIds, ","), d.GetShareId()})
	}
	want := [][]string{
		{pf0Dv + "-vf0", "k8s.nic.drakit.dev/claim=" + uidA + "-" + pf0Dv + "-vf0", ""},
		{pf0Dv, "k8s.nic.drakit.dev/share=" + uidA + "-" + pf0Dv + "-" + share1, share1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prepared devices (-want +got):\n%s", diff)
	}
	if n := len(e.claimStatus(t, "one")); n != 2 {
		t.Errorf("%d status.devices entries after prepare, want 2", n)
	}
	unprep, err := dra.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: []*drapbv1.Claim{pbClaim}})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	if r := unprep.Claims[uidA]; r == nil || r.Error != "" {
		t.Errorf("NodeUnprepareResources response %v, want an entry without error", unprep)
	}
	if e.specExists("claim", uidA) || e.specExists("share", uidA) || e.fs.numVFs(pf0) != "0" || len(e.claimStatus(t, "one")) != 0 {
		t.Errorf("after unprepare: specs %v %v, sriov_numvfs %s, status %v", e.specExists("claim", uidA), e.specExists("share", uidA),
			e.fs.numVFs(pf0), e.claimStatus(t, "one"))
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
		{"no sysfs", func(c *Config) { c.SysfsRoot = "/nonexistent/sys" }, "discover NICs: list PCI devices: open /nonexistent/sys/bus/pci/devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := runEnv(t)
			tc.mutate(&e.cfg)
			err := run(t.Context(), e.cfg, harnesstest.NewFakeClient())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
