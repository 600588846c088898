package ginkgo

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// TestFlagsClientFlags: --drakit.context and --drakit.request-timeout fill
// the Config's KubeContext and RequestTimeout; a bad timeout is an error
// naming the flag.
func TestFlagsClientFlags(t *testing.T) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	cfg := Flags(fs)
	if cfg.KubeContext != "" || cfg.RequestTimeout != 0 {
		t.Errorf("defaults: context %q, timeout %v; want the current-context and no timeout", cfg.KubeContext, cfg.RequestTimeout)
	}
	if err := fs.Parse([]string{"--drakit.kubeconfig", "/k", "--drakit.context", "b", "--drakit.request-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/k" || cfg.KubeContext != "b" || cfg.RequestTimeout != 3*time.Second {
		t.Errorf("parsed: kubeconfig %q, context %q, timeout %v; want /k, b, 3s", cfg.Kubeconfig, cfg.KubeContext, cfg.RequestTimeout)
	}

	fs = flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Flags(fs)
	if err := fs.Parse([]string{"--drakit.request-timeout", "bogus"}); err == nil || !strings.Contains(err.Error(), "drakit.request-timeout") {
		t.Errorf("--drakit.request-timeout bogus: %v, want an error naming the flag", err)
	}
}
