package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli"
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
	// driver deploy and delete (every kind), explain, bench
	// fault-latency, conformance, driver simulate, env and its up, down,
	// status and logs
	if checked < 11 {
		t.Errorf("%d subcommands with --kubeconfig checked, want driver deploy and delete, explain, bench, conformance, driver simulate and environment", checked)
	}
}

// TestPathFlagsAreBound: every name of cli.PathFlags is a string flag of some
// subcommand (a renamed flag would silently stop being resolved).
func TestPathFlagsAreBound(t *testing.T) {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if cli.PathFlags[f.Name] && f.Value.Type() == "string" {
				seen[f.Name] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	for name := range cli.PathFlags {
		if !seen[name] {
			t.Errorf("cli.PathFlags names --%s, but no subcommand has it as a string flag", name)
		}
	}
}

// TestEnvTakesRelativePaths: `drakit env up --images-dir _output/images`
// reaches the cluster's validation with an absolute path (checked on
// status, which validates the same Config and starts nothing).
func TestEnvTakesRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := runRoot(t, "env", "status", "--images-dir", "_output/images", "--run-dir", "run")
	if err != nil && strings.Contains(err.Error(), "absolute, clean") {
		t.Fatalf("drakit env status with relative paths: %v\n%s", err, out)
	}
}

// TestKindScriptFlags: every flag scripts/conformance-kind.sh passes to
// drakit conformance (summarize), drakit env or drakit driver is one of
// theirs.
func TestKindScriptFlags(t *testing.T) {
	script, err := os.ReadFile("../../scripts/conformance-kind.sh")
	if err != nil {
		t.Fatal(err)
	}
	driverDeploy, _, err := newRootCommand().Find([]string{"driver", "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	find := func(path ...string) *cobra.Command {
		c, _, err := newRootCommand().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sets := []*pflag.FlagSet{
		find("conformance").Flags(), find("env").PersistentFlags(),
		find("conformance", "summarize").Flags(), driverDeploy.InheritedFlags(), driverDeploy.Flags(),
	}
	known := func(name string) bool {
		return slices.ContainsFunc(sets, func(fs *pflag.FlagSet) bool { return fs.Lookup(name) != nil })
	}
	flagRE := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	seen := 0
	inDrakit := false
	for _, line := range strings.Split(string(script), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.Contains(line, "$drakit ") || strings.HasPrefix(trimmed, "kind=(") {
			inDrakit = true
		}
		if !inDrakit {
			continue
		}
		for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
			seen++
			if !known(m[1]) {
				t.Errorf("scripts/conformance-kind.sh passes --%s, which no drakit command it runs has: %s", m[1], trimmed)
			}
		}
		inDrakit = strings.HasSuffix(trimmed, "\\")
	}
	if seen < 10 {
		t.Errorf("found %d flags in the script's drakit command lines: the scan missed them", seen)
	}
}

// TestEnvUpIsBareByDefault: drakit env up renders and deploys nothing
// unless told to; drakit conformance --provider renders the default node
// and deploys the GPU driver.
func TestEnvUpIsBareByDefault(t *testing.T) {
	root := newRootCommand()
	envCmd, _, err := root.Find([]string{"env"})
	if err != nil {
		t.Fatal(err)
	}
	confCmd, _, err := root.Find([]string{"conformance"})
	if err != nil {
		t.Fatal(err)
	}
	env, conf := envCmd.PersistentFlags(), confCmd.Flags()
	for _, tc := range []struct {
		fs            *pflag.FlagSet
		name, profile string
		deploy        string
	}{{env, "env", "none", "[none]"}, {conf, "conformance", "dgx-a100-mig", "[gpu]"}} {
		if p, d := tc.fs.Lookup("emulator-profile").DefValue, tc.fs.Lookup("deploy").DefValue; p != tc.profile || d != tc.deploy {
			t.Errorf("drakit %s: --emulator-profile %q --deploy %q by default, want %q and %q", tc.name, p, d, tc.profile, tc.deploy)
		}
	}
}
