// Package kubeconfigtest writes kubeconfig files for tests: two contexts,
// "a" and "b", each naming a cluster of its own, so that a test can tell
// which context a client resolved.
package kubeconfigtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TwoContexts writes a kubeconfig into t's temporary directory whose
// context "a" names server a and context "b" server b (both with user "u",
// token "t"), current-context current (empty: none), and returns its path.
func TwoContexts(t testing.TB, current, a, b string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: a, cluster: {server: %q}}, {name: b, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: a, context: {cluster: a, user: u}}, {name: b, context: {cluster: b, user: u}}]
current-context: %q
`, a, b, current)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
