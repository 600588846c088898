package environment

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/cluster"
	"drakit.dev/drakit/environment/kind"
	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestStatus: a local cluster that was never brought up does not run, and
// Status creates nothing; the existing cluster runs when its API server
// answers and does not when it does not, with the reason; a kind state
// directory without a kubeconfig names none.
func TestStatus(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg := localConfig(t, 1)
	e, err := New(Config{Provider: NewLocal(cfg, "drakit", "")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx)
	if err != nil || st.Running || st.Kubeconfig != cluster.KubeconfigPath(cfg) || len(st.Nodes) != 0 {
		t.Errorf("local cluster never up: %+v, %v; want not running, its kubeconfig path, no nodes", st, err)
	}
	if _, err := os.Stat(cfg.RunDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Status created the run dir %s (%v)", cfg.RunDir, err)
	}

	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer ready.Close()
	path := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", ready.URL)
	for context, want := range map[string]bool{"b": true, "a": false} {
		e, err := New(Config{Provider: NewExisting(path, context, 0)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Status(ctx)
		if err != nil || st.Running != want || st.Kubeconfig != path || (!want && !strings.Contains(st.Detail, "does not answer")) {
			t.Errorf("existing, context %s: %+v, %v; want running %t", context, st, err, want)
		}
	}

	k := NewKind(kind.ConfigOptions{StateDir: t.TempDir()}, "drakit", "")
	if got := k.kubeconfigFile(); got != "" {
		t.Errorf("kind without a kubeconfig in its state dir: %q", got)
	}
}
