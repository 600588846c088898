package environment

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestExistingContext: the existing provider checks, and hands out, the
// cluster of the context given, not the current-context's (a closed
// port); an unknown context is an error naming it.
func TestExistingContext(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer ready.Close()
	path := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", ready.URL)
	x := NewExisting(path, "b", 5*time.Second)
	if _, err := x.Create(ctx); err != nil {
		t.Errorf("Create with context b: %v", err)
	}
	if got := x.GetKubectlContext(); got != "b" {
		t.Errorf("GetKubectlContext: %q, want b", got)
	}
	if rc := x.KubernetesRestConfig(); rc == nil || rc.Host != ready.URL || rc.Timeout != 5*time.Second {
		t.Errorf("KubernetesRestConfig: %+v, want host %s and timeout 5s", rc, ready.URL)
	}
	if got := NewExisting(path, "", 0).GetKubectlContext(); got != "a" {
		t.Errorf("GetKubectlContext without a context: %q, want the current-context a", got)
	}
	if _, err := NewExisting(path, "nope", 0).Create(ctx); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Create with an unknown context: %v, want an error naming it", err)
	}

	// Up as drakit conformance and environment up run it, with a
	// kubeconfig that has no current-context.
	x = NewExisting(kubeconfigtest.TwoContexts(t, "", "http://127.0.0.1:1", ready.URL), "b", 0)
	e, err := New(Config{Provider: x})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Up(ctx, envconf.New()); err != nil {
		t.Errorf("Up with context b and no current-context: %v", err)
	}
}

// TestExistingRequestTimeout: a request to a server that does not answer
// gives up after the request timeout, well before Create's own bound.
func TestExistingRequestTimeout(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	x := NewExisting(kubeconfigtest.TwoContexts(t, "a", hang.URL, "http://127.0.0.1:1"), "", 300*time.Millisecond)
	start := time.Now()
	_, err := x.Create(ctx)
	if !errors.Is(err, ErrNotAnswering) || !strings.Contains(err.Error(), hang.URL) {
		t.Errorf("Create against a hanging server: %v, want ErrNotAnswering naming it", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Create took %v; the request timeout is 300ms", d)
	}
}
