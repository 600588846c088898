package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/conformance"
	"drakit.dev/drakit/internal/kubeconfigtest"
	"drakit.dev/drakit/reference/simulate"
)

// TestRequestTimeoutValues: --request-timeout takes kubectl's values (a
// duration or whole seconds) and refuses others, naming the flag.
func TestRequestTimeoutValues(t *testing.T) {
	for arg, want := range map[string]time.Duration{"5": 5 * time.Second, "1m30s": 90 * time.Second, "0": 0} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		k := bindKubeFlags(fs)
		if err := fs.Parse([]string{"--request-timeout", arg}); err != nil || *k.requestTimeout != want {
			t.Errorf("--request-timeout %s: %v, %v; want %v", arg, *k.requestTimeout, err, want)
		}
	}
	for _, arg := range []string{"bogus", "-1s", "-5"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindKubeFlags(fs)
		if err := fs.Parse([]string{"--request-timeout", arg}); err == nil || !strings.Contains(err.Error(), `"--request-timeout"`) {
			t.Errorf("--request-timeout %s: %v, want an error naming the flag", arg, err)
		}
	}
}

// readyButSlow answers /readyz at once and every other request after a
// while: the existing provider's check passes, the kit's preflight waits.
func readyButSlow(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			fmt.Fprint(w, "ok")
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConformanceClientFlags: the kit's Config gets --context and
// --request-timeout; run against a kubeconfig whose current-context is a
// closed port, --context b reaches context b's server (it passes the
// existing provider's check, then the kit's preflight gives up after the
// request timeout, not the minute of --api-timeout); an unknown context or
// a bad timeout is an error naming it; local and kind refuse both flags.
func TestConformanceClientFlags(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "")
	cfg := conformance.DefaultConfig()
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	bindConformanceFlags(fs, &cfg)
	if err := fs.Parse([]string{"--kubeconfig", "/k", "--context", "b", "--request-timeout", "5"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/k" || cfg.KubeContext != "b" || cfg.RequestTimeout != 5*time.Second {
		t.Errorf("config: kubeconfig %q, context %q, request timeout %v; want /k, b, 5s", cfg.Kubeconfig, cfg.KubeContext, cfg.RequestTimeout)
	}

	srv := readyButSlow(t)
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", srv.URL)
	declared := []string{"--kubeconfig", kubeconfig, "--driver-config", "../../docs/examples/env-only-driver.yaml", "--api-timeout", "1m"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"context b":               {args: []string{"--context", "b", "--request-timeout", "300ms"}, want: "reach API server " + srv.URL},
		"unknown context":         {args: []string{"--context", "nope"}, want: `context "nope" does not exist`},
		"bad request timeout":     {args: []string{"--request-timeout", "bogus"}, want: `invalid argument "bogus" for "--request-timeout" flag`},
		"context with local":      {args: []string{"--provider", "local", "--context", "b"}, want: "--context: not with --provider local"},
		"request timeout w/ kind": {args: []string{"--provider", "kind", "--request-timeout", "5s"}, want: "--request-timeout: not with --provider kind"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := newConformanceCommand()
			cmd.SetArgs(append(append(declared, tc.args...), "--artifacts", t.TempDir()))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			start := time.Now()
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

// TestDriverSimulateClientFlags: driver simulate's own --context and
// --request-timeout (not the driver command's persistent ones) reach
// simulate.Config: an unknown context fails loading the kubeconfig, before
// any profile is read or cluster contacted; a bad timeout names the flag.
func TestDriverSimulateClientFlags(t *testing.T) {
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", "http://127.0.0.1:1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--context", "nope"}, `context "nope" does not exist`},
		{[]string{"--request-timeout", "bogus"}, `invalid argument "bogus" for "--request-timeout" flag`},
		// Context b is known: the client loads, the profile does not.
		{[]string{"--context", "b", "--request-timeout", "5s"}, "no-such-profile"},
	} {
		cmd := newDriverCommand()
		cmd.SetArgs(append([]string{"simulate", "--kubeconfig", kubeconfig, "--nodes", "2", "--profile", "no-such-profile"}, tc.args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drakit driver simulate %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
		if errors.Is(err, simulate.ErrInvalidConfig) {
			t.Errorf("drakit driver simulate %s: %v is an invalid configuration", strings.Join(tc.args, " "), err)
		}
	}
}

// TestEnvClientFlags: env up and status with the existing provider check
// the cluster of --context (context b's server answers, the
// current-context's port is closed); an unknown context is an error naming
// it; local refuses --context and --request-timeout.
func TestEnvClientFlags(t *testing.T) {
	srv := readyButSlow(t)
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "http://127.0.0.1:1", srv.URL)
	for _, tc := range []struct {
		args    []string
		want    string // empty: success
		wantOut string
	}{
		{args: []string{"up", "--provider", "existing", "--context", "b", "--request-timeout", "5s"}, wantOut: "env up (provider existing)"},
		{args: []string{"status", "--provider", "existing", "--context", "b", "-o", "env"}, wantOut: "DRAKIT_CLUSTER_UP='true'\n"},
		{args: []string{"status", "--provider", "existing"}, wantOut: "cluster down (provider existing): the API server does not answer"},
		{args: []string{"up", "--provider", "existing", "--context", "nope"}, want: `context "nope" does not exist`},
		{args: []string{"up", "--provider", "local", "--context", "b", "--run-dir", filepath.Join(t.TempDir(), "run")}, want: "--context: not with --provider local"},
		{args: []string{"down", "--provider", "local", "--request-timeout", "5s", "--run-dir", filepath.Join(t.TempDir(), "run")}, want: "--request-timeout: not with --provider local"},
	} {
		cmd := newEnvCommand()
		cmd.SetArgs(append(tc.args, "--kubeconfig", kubeconfig))
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		switch {
		case tc.want == "" && (err != nil || !strings.Contains(out.String(), tc.wantOut)):
			t.Errorf("drakit env %s: %v, output %q; want success, %q", strings.Join(tc.args, " "), err, out.String(), tc.wantOut)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("drakit env %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
