package driver

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/internal/kubeconfigtest"
	"drakit.dev/drakit/reference/simulate"
)

// TestDriverSimulateFlagsMapOneToOne: every flag sets exactly one field of
// simulate.Config and every field has a flag.
func TestDriverSimulateFlagsMapOneToOne(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "/env/kubeconfig")
	cfg := simulate.DefaultConfig()
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	bindSimulateFlags(fs, &cfg)
	if cfg.Kubeconfig != "/env/kubeconfig" {
		t.Errorf("kubeconfig default %q, want $DRAKIT_KUBECONFIG", cfg.Kubeconfig)
	}
	clitest.CheckFlagsMapOneToOne(t, fs, &cfg)
}

// TestDriverSimulateCommand runs `drakit driver simulate` far enough to see
// that its own flags (not the driver command's persistent ones of the same
// names) reach the configuration: an invalid one is reported before any
// cluster is contacted.
func TestDriverSimulateCommand(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"simulate", "--nodes", "0"}, "Nodes 0"},
		{[]string{"simulate", "--driver-name", "Bad_Name"}, `DriverName "Bad_Name"`},
		{[]string{"simulate", "--timeout", "0s"}, "Timeout 0s"},
		{[]string{"simulate", "--cluster-profile", "nvl72", "--nodes", "5"}, "--nodes does not go with --cluster-profile"},
		{[]string{"simulate", "--cluster-profile", "nvl72", "--profile", "dgx-h100"}, "--profile does not go with --cluster-profile"},
		{[]string{"simulate", "--nodes", "2", "--profile", "no-such-profile", "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
	} {
		cmd := NewDriverCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("drakit driver %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.wantErr)
		}
		if tc.wantErr != "/nonexistent/kubeconfig" && !errors.Is(err, simulate.ErrInvalidConfig) {
			t.Errorf("drakit driver %s: error %v is not simulate.ErrInvalidConfig", strings.Join(tc.args, " "), err)
		}
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
		cmd := NewDriverCommand()
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
