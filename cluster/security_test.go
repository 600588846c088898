package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// checkLocalAccessRefused checks the local cluster's security model on a
// running cluster: a local user or hostNetwork pod without the cluster's
// credentials gets nothing from the kubelet, etcd, the controller-manager or
// the scheduler, while the apiserver, with its own credentials, still
// reaches the kubelet and etcd. Each refusal is checked next to a request
// that succeeds, so the check can fail.
func checkLocalAccessRefused(ctx context.Context, t *testing.T, cfg Config, pod *corev1.Pod) {
	t.Helper()
	local := func(port int, path string) string { return "https://127.0.0.1:" + strconv.Itoa(port) + path }
	anonymous := tlsClient(t, nil, nil)
	kubeletCA := tlsClient(t, readPool(t, pki(cfg, caCert)), nil)
	for _, path := range []string{"/pods", "/configz", "/runningpods/", "/exec/" + pod.Namespace + "/" + pod.Name + "/pause?command=id"} {
		if code, body := status(ctx, anonymous, http.MethodGet, local(cfg.KubeletPort, path), ""); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET kubelet %s: status %d (%s), want 401", path, code, body)
		}
	}
	// A certificate of the cluster CA is authenticated, and authorized only
	// for what RBAC grants it: the apiserver's kubelet client may read pods.
	apiserverAsKubeletClient := tlsClient(t, readPool(t, pki(cfg, caCert)), loadPair(t, pki(cfg, kubeletClientCert), pki(cfg, kubeletClientKey)))
	if code, body := status(ctx, apiserverAsKubeletClient, http.MethodGet, local(cfg.KubeletPort, "/pods"), ""); code != http.StatusOK {
		t.Errorf("kubelet /pods with the apiserver's kubelet client certificate: status %d (%s), want 200", code, body)
	}
	if code, _ := status(ctx, kubeletCA, http.MethodGet, local(cfg.KubeletPort, "/healthz"), ""); code != http.StatusUnauthorized {
		t.Errorf("kubelet serves a certificate the cluster CA does not verify, or /healthz answers anonymous requests on the secure port: %d", code)
	}

	rangeAll := `{"key":"AA==","range_end":"AA=="}`
	etcdRoots := readPool(t, pki(cfg, etcdCACert))
	if code, body := status(ctx, anonymous, http.MethodPost, local(cfg.EtcdClientPort, "/v3/kv/range"), rangeAll); code != 0 {
		t.Errorf("etcd range without a client certificate: status %d (%s), want the TLS handshake refused", code, body)
	}
	plainHTTP := &http.Client{Transport: &http.Transport{Proxy: noProxy, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if code, body := status(ctx, plainHTTP, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(cfg.EtcdClientPort)+"/v3/kv/range", rangeAll); code == http.StatusOK {
		t.Errorf("etcd range over plain HTTP: status %d (%s), want refused", code, body)
	}
	admin := loadKubeconfigPair(t, pki(cfg, adminKubeconfig))
	if code, body := status(ctx, tlsClient(t, etcdRoots, admin), http.MethodPost, local(cfg.EtcdClientPort, "/v3/kv/range"), rangeAll); code != 0 {
		t.Errorf("etcd range with the admin's certificate (cluster CA): status %d (%s), want the TLS handshake refused", code, body)
	}
	apiserverAsEtcdClient := tlsClient(t, etcdRoots, loadPair(t, pki(cfg, etcdClientCert), pki(cfg, etcdClientKey)))
	if code, body := status(ctx, apiserverAsEtcdClient, http.MethodPost, local(cfg.EtcdClientPort, "/v3/kv/range"), `{"key":"L3JlZ2lzdHJ5L25hbWVzcGFjZXMvZGVmYXVsdA=="}`); code != http.StatusOK {
		t.Errorf("etcd range with the apiserver's etcd client certificate: status %d (%s), want 200", code, body)
	}

	for name, port := range map[string]int{ControllerManager: cfg.ControllerManagerPort, Scheduler: cfg.SchedulerPort} {
		for _, path := range []string{"/configz", "/metrics"} {
			if code, body := status(ctx, anonymous, http.MethodGet, local(port, path), ""); code != http.StatusForbidden && code != http.StatusUnauthorized {
				t.Errorf("anonymous GET %s %s: status %d (%s), want 401 or 403", name, path, code, firstLine(body))
			}
		}
	}

	// Through the apiserver, as admin: the kubelet authorizes the
	// apiserver (SubjectAccessReview) for the pod's logs. (The apiserver's
	// node proxy refuses loopback node addresses whatever the credentials.)
	client, err := Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "sleep"}).DoRaw(ctx); err != nil {
		t.Errorf("pod logs through the apiserver (apiserver → kubelet): %v", err)
	}
}

// status sends one request and returns its status code and body; 0 when no
// HTTP answer came (refused connection or TLS handshake).
func status(ctx context.Context, c *http.Client, method, url, body string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// tlsClient trusts roots (none: any server certificate, as a local attacker
// would) and presents cert when given.
func tlsClient(t *testing.T, roots *x509.CertPool, cert *tls.Certificate) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{Proxy: noProxy, DisableKeepAlives: true, TLSClientConfig: tc}, Timeout: 5 * time.Second}
}

func readPool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("%s holds no certificate", path)
	}
	return pool
}

func loadPair(t *testing.T, certFile, keyFile string) *tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// loadKubeconfigPair extracts a kubeconfig's client certificate.
func loadKubeconfigPair(t *testing.T, kubeconfig string) *tls.Certificate {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
	if err != nil {
		t.Fatal(fmt.Errorf("client certificate of %s: %w", filepath.Base(kubeconfig), err))
	}
	return &c
}
