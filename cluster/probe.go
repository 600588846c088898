package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// noProxy keeps every client of this package off any proxy the environment
// names: all cluster traffic stays on 127.0.0.1.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// probe checks one component's readiness endpoint once.
type probe func(ctx context.Context) error

// probes returns the readiness check of every component; containerd's and
// the kubelet's are those of the node cfg is narrowed to (node 1's).
func probes(cfg Config) map[string]probe {
	local := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	plain := &http.Client{Transport: &http.Transport{Proxy: noProxy, DisableKeepAlives: true}}
	// The controller-manager and scheduler serve self-signed certificates
	// generated in memory; only their health is read, on 127.0.0.1.
	selfSigned := &http.Client{Transport: &http.Transport{Proxy: noProxy, DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return map[string]probe{
		Etcd: func(ctx context.Context) error {
			// The metrics listener, plain HTTP on 127.0.0.1: the client
			// port wants a client certificate of etcd's CA.
			return getOK(ctx, plain, "http://"+local(cfg.EtcdMetricsPort)+"/health", `"health":"true"`)
		},
		APIServer: func(ctx context.Context) error {
			c, err := caClient(cfg)
			if err != nil {
				return err
			}
			return getOK(ctx, c, "https://"+local(cfg.APIServerPort)+"/readyz", "ok")
		},
		ControllerManager: func(ctx context.Context) error {
			return getOK(ctx, selfSigned, "https://"+local(cfg.ControllerManagerPort)+"/healthz", "ok")
		},
		Scheduler: func(ctx context.Context) error {
			return getOK(ctx, selfSigned, "https://"+local(cfg.SchedulerPort)+"/readyz", "ok")
		},
		Containerd: func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", ContainerdSocket(cfg))
			if err != nil {
				return err
			}
			return conn.Close()
		},
		Kubelet: func(ctx context.Context) error {
			return getOK(ctx, plain, "http://"+net.JoinHostPort(nodeName(cfg), strconv.Itoa(cfg.KubeletHealthzPort))+"/healthz", "ok")
		},
	}
}

// caClient is an HTTP client that trusts the cluster CA (the apiserver lets
// anonymous clients read /readyz).
func caClient(cfg Config) (*http.Client, error) {
	pem, err := os.ReadFile(filepath.Join(pkiDir(cfg), caCert))
	if err != nil {
		return nil, fmt.Errorf("read cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("read cluster CA %s: no certificate", filepath.Join(pkiDir(cfg), caCert))
	}
	return &http.Client{Transport: &http.Transport{Proxy: noProxy, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

// getOK GETs url and wants status 200 and a body containing want.
func getOK(ctx context.Context, c *http.Client, url, want string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Client returns a clientset for the cluster, authenticated as admin, that
// never uses a proxy.
func Client(cfg Config) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(cfg))
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", KubeconfigPath(cfg), err)
	}
	rc.Proxy = noProxy
	rc.Timeout = 15 * time.Second
	// No idle connections: a connection this process keeps open to an
	// apiserver that Down then kills holds the apiserver's port (the
	// server side waits in FIN_WAIT2 for this side to close), and an Up
	// in the same process would find the port in use.
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if t, ok := rt.(*http.Transport); ok {
			t.DisableKeepAlives = true
		}
		return rt
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return c, nil
}
