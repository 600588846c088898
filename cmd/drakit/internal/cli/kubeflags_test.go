package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/internal/kubeconfigtest"
)

// TestRequestTimeoutValues: --request-timeout takes kubectl's values (a
// duration or whole seconds) and refuses others, naming the flag.
func TestRequestTimeoutValues(t *testing.T) {
	for arg, want := range map[string]time.Duration{"5": 5 * time.Second, "1m30s": 90 * time.Second, "0": 0} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		k := BindKubeFlags(fs)
		if err := fs.Parse([]string{"--request-timeout", arg}); err != nil || *k.requestTimeout != want {
			t.Errorf("--request-timeout %s: %v, %v; want %v", arg, *k.requestTimeout, err, want)
		}
	}
	for _, arg := range []string{"bogus", "-1s", "-5"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		BindKubeFlags(fs)
		if err := fs.Parse([]string{"--request-timeout", arg}); err == nil || !strings.Contains(err.Error(), `"--request-timeout"`) {
			t.Errorf("--request-timeout %s: %v, want an error naming the flag", arg, err)
		}
	}
}

// TestKubeFlags: --kubeconfig defaults to $DRAKIT_KUBECONFIG, an empty one
// falls back to $KUBECONFIG, --context picks the context and
// --request-timeout the client's timeout.
func TestKubeFlags(t *testing.T) {
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "https://127.0.0.1:6443", "https://127.0.0.2:7443")
	parse := func(args ...string) *KubeFlags {
		t.Helper()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		k := BindKubeFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return k
	}
	t.Setenv("DRAKIT_KUBECONFIG", kubeconfig)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	rc, err := parse().RestConfig()
	if err != nil || rc.Host != "https://127.0.0.1:6443" || rc.Timeout != 0 {
		t.Errorf("defaults: %v, %v; want $DRAKIT_KUBECONFIG's current context, no timeout", rc, err)
	}
	rc, err = parse("--context", "b", "--request-timeout", "5s").RestConfig()
	if err != nil || rc.Host != "https://127.0.0.2:7443" || rc.Timeout != 5*time.Second {
		t.Errorf("--context b --request-timeout 5s: %v, %v", rc, err)
	}
	if _, err := parse("--context", "c").RestConfig(); err == nil || !strings.Contains(err.Error(), "load kubeconfig") {
		t.Errorf("--context c: %v, want an error", err)
	}
	t.Setenv("DRAKIT_KUBECONFIG", "")
	t.Setenv("KUBECONFIG", kubeconfig)
	rc, err = parse("--context", "b").RestConfig()
	if err != nil || rc.Host != "https://127.0.0.2:7443" {
		t.Errorf("empty --kubeconfig with $KUBECONFIG: %v, %v", rc, err)
	}
}
