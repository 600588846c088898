package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/internal/kubeconfigtest"
)

// runRoot runs drakit (every subcommand) with args and returns its output.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// TestRootLoggingFlags: every subcommand inherits -v, --vmodule and
// --logging-format; a format that does not exist is refused before the
// subcommand runs; the subcommand's context carries the logger.
func TestRootLoggingFlags(t *testing.T) {
	root := newRootCommand()
	var missing []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range []string{"v", "vmodule", "logging-format"} {
			if c.Flag(name) == nil && c.InheritedFlags().Lookup(name) == nil {
				missing = append(missing, c.CommandPath()+" --"+name)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(missing) > 0 {
		t.Errorf("without the logging flags: %v", missing)
	}
	if _, err := runRoot(t, "version", "--logging-format=xml"); err == nil || !strings.Contains(err.Error(), "apply logging flags") {
		t.Errorf("--logging-format=xml: %v, want the logging flags refused", err)
	}

	root = newRootCommand()
	var loggerErr error
	ran := false
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(c *cobra.Command, _ []string) error {
		_, loggerErr = logr.FromContext(c.Context())
		ran = true
		return nil
	}})
	root.SetArgs([]string{"probe"})
	if err := root.ExecuteContext(t.Context()); err != nil || !ran {
		t.Fatalf("probe: ran %v, %v", ran, err)
	}
	if loggerErr != nil {
		t.Errorf("the subcommand's context has no logger: %v", loggerErr)
	}
}

// TestVersion: the stamped version wins, the Go and Kubernetes versions are
// there, -o json and -o yaml decode to the same, another -o is refused.
func TestVersion(t *testing.T) {
	v := currentVersion("v0.3.0-5-gabcdef-dirty")
	if v.Drakit != "v0.3.0-5-gabcdef-dirty" || v.Kubernetes != "v1.37.2" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("version %+v", v)
	}
	if unstamped := currentVersion(""); unstamped.Drakit == "" {
		t.Error("an unstamped build has no version")
	}
	var lines, js, ym bytes.Buffer
	if err := v.print(&lines, ""); err != nil || !strings.Contains(lines.String(), "drakit v0.3.0-5-gabcdef-dirty\n") || !strings.Contains(lines.String(), "Kubernetes v1.37.2") {
		t.Errorf("lines %q, %v", lines.String(), err)
	}
	var fromJSON, fromYAML versionInfo
	if err := v.print(&js, "json"); err != nil || json.Unmarshal(js.Bytes(), &fromJSON) != nil || fromJSON != v {
		t.Errorf("json %q (%v) decodes to %+v, want %+v", js.String(), err, fromJSON, v)
	}
	if err := v.print(&ym, "yaml"); err != nil || yaml.UnmarshalStrict(ym.Bytes(), &fromYAML) != nil || fromYAML != v {
		t.Errorf("yaml %q (%v) decodes to %+v, want %+v", ym.String(), err, fromYAML, v)
	}
	if _, err := runRoot(t, "version", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("version -o xml: %v, want refused", err)
	}
	if out, err := runRoot(t, "version"); err != nil || !strings.Contains(out, "Kubernetes v1.37.2") {
		t.Errorf("drakit version: %q, %v", out, err)
	}
}

// TestCompletion: drakit completion bash prints a script, and the flags
// with fixed values complete them: --logging-format, version -o, the
// built-in emulator profiles and --context from the kubeconfig.
func TestCompletion(t *testing.T) {
	out, err := runRoot(t, "completion", "bash")
	if err != nil || !strings.Contains(out, "bash completion V2 for drakit") || !strings.Contains(out, "__start_drakit") {
		t.Fatalf("completion bash: %v, output starts %q", err, out[:min(len(out), 200)])
	}
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "https://127.0.0.1:6443", "https://127.0.0.2:7443")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"version", "--logging-format", ""}, []string{"text", "json"}},
		{[]string{"version", "-o", ""}, []string{"json", "yaml"}},
		{[]string{"emulator", "render", "--profile", ""}, []string{"dgx-a100-mig", "dgx-h100"}},
		{[]string{"driver", "deploy", "--kubeconfig", kubeconfig, "--context", ""}, []string{"a", "b"}},
		{[]string{"explain", "--kubeconfig", kubeconfig, "--context", ""}, []string{"a", "b"}},
		{[]string{"conformance", "--kubeconfig", kubeconfig, "--context", ""}, []string{"a", "b"}},
		{[]string{"driver", "simulate", "--kubeconfig", kubeconfig, "--context", ""}, []string{"a", "b"}},
		{[]string{"env", "up", "--kubeconfig", kubeconfig, "--context", ""}, []string{"a", "b"}},
		{[]string{"env", "status", "--provider", ""}, []string{"existing", "kind", "local"}},
		{[]string{"env", "status", "-o", ""}, []string{"text", "json", "env"}},
	} {
		out, err := runRoot(t, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		if err != nil {
			t.Errorf("complete %q: %v", tc.args, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, w := range tc.want {
			found := false
			for _, l := range lines {
				found = found || l == w
			}
			if !found {
				t.Errorf("complete %q: %q, want %s among the candidates", tc.args, out, w)
			}
		}
	}
}

// TestKubeFlags: --kubeconfig defaults to $DRAKIT_KUBECONFIG, an empty one
// falls back to $KUBECONFIG, --context picks the context and
// --request-timeout the client's timeout.
func TestKubeFlags(t *testing.T) {
	kubeconfig := kubeconfigtest.TwoContexts(t, "a", "https://127.0.0.1:6443", "https://127.0.0.2:7443")
	parse := func(args ...string) *kubeFlags {
		t.Helper()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		k := bindKubeFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return k
	}
	t.Setenv("DRAKIT_KUBECONFIG", kubeconfig)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	rc, err := parse().restConfig()
	if err != nil || rc.Host != "https://127.0.0.1:6443" || rc.Timeout != 0 {
		t.Errorf("defaults: %v, %v; want $DRAKIT_KUBECONFIG's current context, no timeout", rc, err)
	}
	rc, err = parse("--context", "b", "--request-timeout", "5s").restConfig()
	if err != nil || rc.Host != "https://127.0.0.2:7443" || rc.Timeout != 5*time.Second {
		t.Errorf("--context b --request-timeout 5s: %v, %v", rc, err)
	}
	if _, err := parse("--context", "c").restConfig(); err == nil || !strings.Contains(err.Error(), "load kubeconfig") {
		t.Errorf("--context c: %v, want an error", err)
	}
	t.Setenv("DRAKIT_KUBECONFIG", "")
	t.Setenv("KUBECONFIG", kubeconfig)
	rc, err = parse("--context", "b").restConfig()
	if err != nil || rc.Host != "https://127.0.0.2:7443" {
		t.Errorf("empty --kubeconfig with $KUBECONFIG: %v, %v", rc, err)
	}
}

// TestEveryKubeconfigHasClientFlags: every subcommand with --kubeconfig has
// --context and --request-timeout too, bound with it: a subcommand with a
// --kubeconfig of its own (driver simulate's, beside the driver command's
// persistent one) has its own --context and --request-timeout.
func TestEveryKubeconfigHasClientFlags(t *testing.T) {
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flag("kubeconfig") != nil {
			checked++
			for _, name := range []string{"context", "request-timeout"} {
				if c.Flag(name) == nil {
					t.Errorf("%s has --kubeconfig but no --%s", c.CommandPath(), name)
				}
				if own := c.LocalFlags().Lookup("kubeconfig") != nil; own != (c.LocalFlags().Lookup(name) != nil) {
					t.Errorf("%s: --kubeconfig and --%s are not bound together (own --kubeconfig: %t)", c.CommandPath(), name, own)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	// deploy and delete of five drivers, explain, bench fault-latency,
	// conformance, driver simulate, env and its up, down, status and logs
	if checked < 17 {
		t.Errorf("%d subcommands with --kubeconfig checked, want every driver's deploy and delete, explain, bench, conformance, driver simulate and environment", checked)
	}
}
