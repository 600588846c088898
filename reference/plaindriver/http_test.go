package plaindriver

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// freeLoopbackPort returns 127.0.0.1:<a port nothing listened on a moment
// ago>.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestRunServesMetricsAndHealth: with HTTPEndpoint the running driver
// answers /healthz with 503 until the kubelet registers it and "ok" after,
// and /metrics counts the kubelet's prepare and unprepare over gRPC and
// the published devices.
func TestRunServesMetricsAndHealth(t *testing.T) {
	t.Parallel()
	cfg := runConfig(t, "")
	cfg.HTTPEndpoint = freeLoopbackPort(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	client := harnesstest.NewFakeClient(node, claimOf("two", uidA, "dev-1", "dev-3"))
	_, errc := harnesstest.StartRun(t, t.Context(), func(ctx context.Context) error { return run(ctx, cfg, client, time.Hour) })
	harnesstest.WaitForSlices(t, t.Context(), client, errc, 20*time.Millisecond)
	base := "http://" + cfg.HTTPEndpoint

	if code, body := httpGet(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not registered") {
		t.Errorf("/healthz before registration: %d %q, want 503", code, body)
	}
	reg := registerapi.NewRegistrationClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletRegistrarDir, testDriver+"-reg.sock")))
	if _, err := reg.NotifyRegistrationStatus(t.Context(), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("NotifyRegistrationStatus: %v", err)
	}
	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz once registered: %d %q, want 200 ok", code, body)
	}

	dra := drapbv1.NewDRAPluginClient(harnesstest.Dial(t, filepath.Join(cfg.KubeletPluginDir, "dra.sock")))
	claims := []*drapbv1.Claim{{Namespace: "test", Name: "two", Uid: uidA}}
	if _, err := dra.NodePrepareResources(t.Context(), &drapbv1.NodePrepareResourcesRequest{Claims: claims}); err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	if _, err := dra.NodeUnprepareResources(t.Context(), &drapbv1.NodeUnprepareResourcesRequest{Claims: claims}); err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	_, body := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`drakit_dra_plugin_requests_total{operation="prepare",result="success"} 1`,
		`drakit_dra_plugin_requests_total{operation="unprepare",result="success"} 1`,
		`drakit_dra_plugin_claims_total{operation="prepare",result="success"} 1`,
		`drakit_dra_plugin_published_devices 4`,
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics has no line %q", want)
		}
	}
}
