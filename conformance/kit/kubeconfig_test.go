package kit

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestLoadKubeconfigContextAndRequestTimeout: KubeContext picks the
// kubeconfig's context, RequestTimeout lands in the client configuration,
// and an unknown context is an error naming it.
func TestLoadKubeconfigContextAndRequestTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Kubeconfig = kubeconfigtest.TwoContexts(t, "a", "https://127.0.0.1:1001", "https://127.0.0.1:1002")
	rc, err := loadKubeconfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:1001" || rc.Timeout != 0 {
		t.Errorf("no context, no timeout: host %s, timeout %v; want the current-context's server, no timeout", rc.Host, rc.Timeout)
	}
	cfg.KubeContext, cfg.RequestTimeout = "b", 7*time.Second
	if rc, err = loadKubeconfig(cfg); err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:1002" || rc.Timeout != 7*time.Second {
		t.Errorf("context b, timeout 7s: host %s, timeout %v; want context b's server and 7s", rc.Host, rc.Timeout)
	}
	cfg.KubeContext = "nope"
	if _, err := loadKubeconfig(cfg); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: %v, want an error naming it", err)
	}
}

// TestRunUsesContextAndRequestTimeout: Run talks to the server of
// KubeContext, not of the current-context (a closed port), and gives up on
// a request after RequestTimeout, well within Timeouts.API.
func TestRunUsesContextAndRequestTimeout(t *testing.T) {
	t.Parallel()
	var asked []string
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	cfg := testConfig(t)
	cfg.Kubeconfig = kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", hang.URL)
	cfg.KubeContext, cfg.RequestTimeout = "b", 300*time.Millisecond
	cfg.Timeouts.API = time.Minute
	cfg.Output = &bytes.Buffer{}
	start := time.Now()
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "reach API server "+hang.URL) {
		t.Fatalf("Run: %v, want the preflight to fail reaching context b's server %s", err, hang.URL)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v to fail; the request timeout is 300ms", d)
	}
	hang.Close() // waits for the handler: asked is complete
	if len(asked) == 0 {
		t.Error("context b's server was never asked")
	}
}

// TestValidateRequestTimeout: a negative request timeout is invalid.
func TestValidateRequestTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RequestTimeout = -time.Second
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "RequestTimeout: -1s must not be negative") {
		t.Errorf("Validate: %v, want ErrInvalidConfig naming RequestTimeout", err)
	}
}
