package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestConfigContextAndRequestTimeout: KubeContext picks the
// kubeconfig's context, RequestTimeout lands in the client configuration,
// and an unknown context is an error naming it.
func TestRestConfigContextAndRequestTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
current-context: a
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1001"}}
- {name: b, cluster: {server: "https://127.0.0.1:1002"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Kubeconfig = path
	rc, err := restConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:1001" || rc.Timeout != 0 {
		t.Errorf("no context, no timeout: host %s, timeout %v; want the current-context's server, no timeout", rc.Host, rc.Timeout)
	}
	cfg.KubeContext, cfg.RequestTimeout = "b", 7*time.Second
	if rc, err = restConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:1002" || rc.Timeout != 7*time.Second {
		t.Errorf("context b, timeout 7s: host %s, timeout %v; want context b's server and 7s", rc.Host, rc.Timeout)
	}
	cfg.KubeContext = "nope"
	if _, err := restConfig(cfg); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: %v, want an error naming it", err)
	}
}
