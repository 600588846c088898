package pluginharness

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestCheckHTTPEndpoint: only host:port with a loopback IP literal and a
// port number passes; empty is off.
func TestCheckHTTPEndpoint(t *testing.T) {
	t.Parallel()
	for endpoint, want := range map[string]string{
		"":                 "",
		"127.0.0.1:9470":   "",
		"127.0.0.2:0":      "",
		"[::1]:9470":       "",
		"0.0.0.0:9470":     `host "0.0.0.0" is not a loopback IP address`,
		":9470":            `host "" is not a loopback IP address`,
		"localhost:9470":   `host "localhost" is not a loopback IP address`,
		"10.1.2.3:9470":    `host "10.1.2.3" is not a loopback IP address`,
		"[::]:9470":        `host "::" is not a loopback IP address`,
		"127.0.0.1":        "is not host:port",
		"127.0.0.1:http":   `port "http" is not a port number`,
		"127.0.0.1:70000":  `port "70000" is not a port number`,
		"127.0.0.1:-1":     `port "-1" is not a port number`,
		"http://127.0.0.1": `host "http" is not a loopback IP address`,
	} {
		err := CheckHTTPEndpoint(endpoint)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckHTTPEndpoint(%q) = %v, want nil", endpoint, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "HTTPEndpoint")):
			t.Errorf("CheckHTTPEndpoint(%q) = %v, want an error naming HTTPEndpoint with %q", endpoint, err, want)
		}
	}
}

// get fetches url and returns the status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// call runs o's interceptor for method with handler's answer.
func call(t *testing.T, o *observer, method string, req, resp any, err error) {
	t.Helper()
	got, gotErr := o.intercept(t.Context(), req, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) { return resp, err })
	if got != resp || !errors.Is(gotErr, err) {
		t.Fatalf("%s: the interceptor changed the answer: %v, %v", method, got, gotErr)
	}
}

// TestObserverHealthz: /healthz answers 503 until the kubelet registered
// the plugin and while its DRA socket does not accept connections, then
// "ok"; a later failed registration makes it 503 again.
func TestObserverHealthz(t *testing.T) {
	t.Parallel()
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
	dra := filepath.Join(t.TempDir(), "dra.sock")
	o := newObserver(dra)
	addr, stop, err := o.serveHTTP(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := "http://" + addr + "/healthz"
	const notify = "/pluginregistration.Registration/NotifyRegistrationStatus"

	if code, body := get(t, url); code != http.StatusServiceUnavailable || !strings.Contains(body, "not registered") {
		t.Errorf("before registration: %d %q, want 503 naming the registration", code, body)
	}
	call(t, o, notify, &registerapi.RegistrationStatus{PluginRegistered: true}, &registerapi.RegistrationStatusResponse{}, nil)
	if code, body := get(t, url); code != http.StatusServiceUnavailable || !strings.Contains(body, "dial DRA socket") {
		t.Errorf("registered, no DRA socket: %d %q, want 503 naming the socket", code, body)
	}
	l, err := net.Listen("unix", dra)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if code, body := get(t, url); code != http.StatusOK || body != "ok\n" {
		t.Errorf("registered and serving: %d %q, want 200 ok", code, body)
	}
	call(t, o, notify, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "bad"}, nil, errors.New("failed registration process"))
	if code, _ := get(t, url); code != http.StatusServiceUnavailable {
		t.Errorf("after a failed registration: %d, want 503", code)
	}
	if code, _ := get(t, "http://"+addr+"/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d, want 404", code)
	}
}

// TestObserverMetrics: the calls of each served API version are counted
// and timed by operation and result, their claims by result, the published
// devices are the last pools' count, and the Go and process collectors are
// there.
func TestObserverMetrics(t *testing.T) {
	t.Parallel()
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
	o := newObserver(filepath.Join(t.TempDir(), "dra.sock"))
	addr, stop, err := o.serveHTTP(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	call(t, o, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", &drav1.NodePrepareResourcesRequest{},
		&drav1.NodePrepareResourcesResponse{Claims: map[string]*drav1.NodePrepareResourceResponse{"a": {}, "b": {Error: "no such device"}}}, nil)
	call(t, o, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", &drav1.NodePrepareResourcesRequest{},
		nil, errors.New("claims not found"))
	call(t, o, "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources", &drav1beta1.NodeUnprepareResourcesRequest{},
		&drav1beta1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1beta1.NodeUnprepareResourceResponse{"a": {}}}, nil)
	call(t, o, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", &drav1.NodeUnprepareResourcesRequest{},
		&drav1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1.NodeUnprepareResourceResponse{"a": {}}}, nil)
	devs := func(names ...string) []resourceapi.Device {
		var out []resourceapi.Device
		for _, n := range names {
			out = append(out, resourceapi.Device{Name: n})
		}
		return out
	}
	pub := gaugedPublisher{&countingPublisher{}, o}
	if err := pub.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		"node":  {Slices: []resourceslice.Slice{{Devices: devs("gpu-0", "gpu-1")}, {Devices: devs("gpu-2")}}},
		"other": {Slices: []resourceslice.Slice{{Devices: devs("x")}}},
	}}); err != nil {
		t.Fatal(err)
	}

	code, body := get(t, "http://"+addr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, want := range []string{
		`drakit_dra_plugin_requests_total{operation="prepare",result="claim_error"} 1`,
		`drakit_dra_plugin_requests_total{operation="prepare",result="error"} 1`,
		`drakit_dra_plugin_requests_total{operation="unprepare",result="success"} 2`,
		`drakit_dra_plugin_request_duration_seconds_count{operation="prepare",result="claim_error"} 1`,
		`drakit_dra_plugin_request_duration_seconds_count{operation="unprepare",result="success"} 2`,
		`drakit_dra_plugin_claims_total{operation="prepare",result="error"} 1`,
		`drakit_dra_plugin_claims_total{operation="prepare",result="success"} 1`,
		`drakit_dra_plugin_claims_total{operation="unprepare",result="success"} 2`,
		`drakit_dra_plugin_published_devices 4`,
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics has no line %q", want)
		}
	}
	if strings.Contains(body, `operation="unprepare",result="claim_error"`) {
		t.Errorf("/metrics counts an unprepare with a claim error that did not happen")
	}
}

// TestServeHTTPRefusesNonLoopback: a non-loopback endpoint is refused
// before anything listens.
func TestServeHTTPRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	o := newObserver("/nonexistent/dra.sock")
	if _, _, err := o.serveHTTP(t.Context(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "HTTPEndpoint") {
		t.Fatalf("serveHTTP(0.0.0.0:0) = %v, want an error naming HTTPEndpoint", err)
	}
}
