package drivercmd

import (
	"strings"
	"testing"
	"time"

	"drakit.dev/drakit/reference/pluginharness"
)

// TestTwins: a set twin replaces the default, a flag wins over it, and the
// first twin that does not parse is Parse's error, before the arguments.
func TestTwins(t *testing.T) {
	t.Setenv("DRIVERCMD_S", "from-env")
	t.Setenv("DRIVERCMD_N", "3")
	t.Setenv("DRIVERCMD_D", "2s")
	s, n, on, d := "default", 1, false, time.Second
	f := New("test")
	f.String(&s, "s", "DRIVERCMD_S", "s")
	f.Int(&n, "n", "DRIVERCMD_N", "n")
	f.Bool(&on, "b", "DRIVERCMD_UNSET", "b")
	f.Duration(&d, "d", "DRIVERCMD_D", "d")
	logging, help, err := f.Parse([]string{"--n=5"})
	if err != nil || help || logging == nil {
		t.Fatalf("Parse: %v (help %v, logging %v)", err, help, logging)
	}
	if s != "from-env" || n != 5 || on || d != 2*time.Second {
		t.Errorf("got s=%q n=%d b=%v d=%s, want from-env 5 false 2s", s, n, on, d)
	}

	t.Setenv("DRIVERCMD_N", "many")
	t.Setenv("DRIVERCMD_B", "maybe")
	f = New("test")
	f.Int(&n, "n", "DRIVERCMD_N", "n")
	f.Bool(&on, "b", "DRIVERCMD_B", "b")
	if _, _, err := f.Parse([]string{"--unknown"}); err == nil || !strings.Contains(err.Error(), `parse env DRIVERCMD_N="many"`) {
		t.Errorf("error %v, want the first twin's", err)
	}
	f = New("test")
	if _, _, err := f.Parse([]string{"extra"}); err == nil || !strings.Contains(err.Error(), `unexpected arguments ["extra"]`) {
		t.Errorf("error %v, want the positional argument refused", err)
	}
	f = New("test")
	if _, help, err := f.Parse([]string{"--help"}); err != nil || !help {
		t.Errorf("--help: help %v, error %v", help, err)
	}
}

// TestHTTPEndpointLoopbackOnly: --http-endpoint (and its twin) is empty or
// a loopback host:port; anything else is Parse's error, naming the flag.
func TestHTTPEndpointLoopbackOnly(t *testing.T) {
	t.Setenv("HTTP_ENDPOINT", "")
	parse := func(args ...string) (string, error) {
		var k pluginharness.Kubelet
		f := New("test")
		f.Kubelet(&k)
		_, _, err := f.Parse(args)
		return k.HTTPEndpoint, err
	}
	if got, err := parse("--http-endpoint=127.0.0.1:9470"); err != nil || got != "127.0.0.1:9470" {
		t.Errorf("loopback: %q, %v", got, err)
	}
	if got, err := parse(); err != nil || got != "" {
		t.Errorf("default: %q, %v; want empty (off)", got, err)
	}
	for _, bad := range []string{"0.0.0.0:9470", ":9470", "192.0.2.1:9470", "localhost:9470"} {
		if _, err := parse("--http-endpoint=" + bad); err == nil || !strings.Contains(err.Error(), "--http-endpoint") {
			t.Errorf("--http-endpoint=%s: error %v, want one naming the flag", bad, err)
		}
	}
	t.Setenv("HTTP_ENDPOINT", "0.0.0.0:1")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "--http-endpoint") {
		t.Errorf("HTTP_ENDPOINT=0.0.0.0:1: error %v, want one naming the flag", err)
	}
}
