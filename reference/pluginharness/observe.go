package pluginharness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"k8s.io/component-base/metrics"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The results a prepare or unprepare call is counted under: every claim
// prepared (or unprepared), some claim with an error of its own, or the
// whole call failed.
const (
	resultSuccess    = "success"
	resultClaimError = "claim_error"
	resultError      = "error"
)

// The operations, by the gRPC method of any served DRA API version.
var operations = map[string]string{"NodePrepareResources": "prepare", "NodeUnprepareResources": "unprepare"}

// CheckHTTPEndpoint reports an HTTPEndpoint that is not empty and not
// host:port with a loopback IP address (127.0.0.0/8, ::1) and a port: the
// metrics and health endpoint is never served beyond the node's loopback.
func CheckHTTPEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("HTTPEndpoint %q is not host:port: %w", endpoint, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("HTTPEndpoint %q: host %q is not a loopback IP address (127.0.0.0/8 or ::1); metrics and health are served on loopback only", endpoint, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("HTTPEndpoint %q: port %q is not a port number", endpoint, port)
	}
	return nil
}

// observer counts and times the kubelet's calls, keeps the registration
// status and the published devices, and serves them over HTTP.
type observer struct {
	registry  metrics.KubeRegistry
	requests  *metrics.CounterVec
	duration  *metrics.HistogramVec
	claims    *metrics.CounterVec
	published *metrics.Gauge
	// registered is the kubelet's last registration status: whether it
	// registered the plugin.
	registered atomic.Bool
	// draSocket is the DRA gRPC socket /healthz dials.
	draSocket string
}

func newObserver(draSocket string) *observer {
	o := &observer{
		registry: metrics.NewKubeRegistry(),
		requests: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "drakit", Subsystem: "dra_plugin", Name: "requests_total",
			Help:           "NodePrepareResources and NodeUnprepareResources calls of the kubelet, by operation (prepare, unprepare) and result (success, claim_error: some claim failed, error: the call failed).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation", "result"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: "drakit", Subsystem: "dra_plugin", Name: "request_duration_seconds",
			Help:           "How long the driver took for a NodePrepareResources or NodeUnprepareResources call, by operation and result.",
			Buckets:        []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 45},
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation", "result"}),
		claims: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "drakit", Subsystem: "dra_plugin", Name: "claims_total",
			Help:           "Claims in the kubelet's calls, by operation and result (success, error).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"operation", "result"}),
		published: metrics.NewGauge(&metrics.GaugeOpts{
			Namespace: "drakit", Subsystem: "dra_plugin", Name: "published_devices",
			Help:           "Devices in the pools the driver last handed to the ResourceSlice controller.",
			StabilityLevel: metrics.ALPHA,
		}),
		draSocket: draSocket,
	}
	o.registry.MustRegister(o.requests, o.duration, o.claims, o.published)
	o.registry.RawMustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return o
}

// intercept is the kubelet plugin helper's gRPC interceptor, for the DRA
// and the registration service: it counts and times prepare and unprepare
// and records the kubelet's registration status.
func (o *observer) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	method := path.Base(info.FullMethod)
	if method == "NotifyRegistrationStatus" {
		st, ok := req.(*registerapi.RegistrationStatus)
		o.registered.Store(ok && err == nil && st.PluginRegistered)
		return resp, err
	}
	op, ok := operations[method]
	if !ok {
		return resp, err
	}
	result := resultSuccess
	if err != nil {
		result = resultError
	} else {
		failed, total := claimErrors(resp)
		o.claims.WithLabelValues(op, resultError).Add(float64(failed))
		o.claims.WithLabelValues(op, resultSuccess).Add(float64(total - failed))
		if failed > 0 {
			result = resultClaimError
		}
	}
	o.requests.WithLabelValues(op, result).Inc()
	o.duration.WithLabelValues(op, result).Observe(time.Since(start).Seconds())
	return resp, err
}

// claimErrors counts the claims of a prepare or unprepare response (any
// served API version) and those with an error.
func claimErrors(resp any) (failed, total int) {
	count := func(errs ...string) {
		for _, e := range errs {
			total++
			if e != "" {
				failed++
			}
		}
	}
	switch r := resp.(type) {
	case *drav1.NodePrepareResourcesResponse:
		for _, c := range r.GetClaims() {
			count(c.GetError())
		}
	case *drav1.NodeUnprepareResourcesResponse:
		for _, c := range r.GetClaims() {
			count(c.GetError())
		}
	case *drav1beta1.NodePrepareResourcesResponse:
		for _, c := range r.GetClaims() {
			count(c.GetError())
		}
	case *drav1beta1.NodeUnprepareResourcesResponse:
		for _, c := range r.GetClaims() {
			count(c.GetError())
		}
	}
	return failed, total
}

// gaugedPublisher sets the published devices gauge to what it hands on.
type gaugedPublisher struct {
	publisher
	o *observer
}

func (c gaugedPublisher) PublishResources(ctx context.Context, resources resourceslice.DriverResources) error {
	n := 0
	for _, pool := range resources.Pools {
		for _, s := range pool.Slices {
			n += len(s.Devices)
		}
	}
	c.o.published.Set(float64(n))
	return c.publisher.PublishResources(ctx, resources)
}

// healthy reports why the plugin is not serving, or nil: the kubelet must
// have registered it and its DRA socket must accept a connection.
func (o *observer) healthy(ctx context.Context) error {
	if !o.registered.Load() {
		return errors.New("the kubelet has not registered the plugin")
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "unix", o.draSocket)
	if err != nil {
		return fmt.Errorf("dial DRA socket: %w", err)
	}
	return conn.Close()
}

// handler serves /metrics (Prometheus text format) and /healthz ("ok", or
// 503 with the reason).
func (o *observer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.HandlerFor(o.registry, metrics.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := o.healthy(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serveHTTP listens on endpoint (checked by CheckHTTPEndpoint) and serves
// o's handler. The listener is open when it returns, at addr; stop stops
// the server and waits for it.
func (o *observer) serveHTTP(ctx context.Context, endpoint string) (addr string, stop func(), err error) {
	if err := CheckHTTPEndpoint(endpoint); err != nil {
		return "", nil, err
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", endpoint)
	if err != nil {
		return "", nil, fmt.Errorf("listen on HTTPEndpoint %s: %w", endpoint, err)
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{Handler: o.handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Serving metrics and health failed", "endpoint", l.Addr().String())
		}
	}()
	logger.Info("Serving metrics and health", "endpoint", l.Addr().String(), "paths", []string{"/metrics", "/healthz"})
	return l.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil { // a scrape still running after the timeout
			srv.Close()
		}
		<-done
	}, nil
}
