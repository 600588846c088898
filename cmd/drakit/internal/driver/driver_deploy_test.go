package driver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/reference/deploy"
)

// The checks drakit driver, plain-driver and nic-driver's tests share.

// manifestsOutput runs the manifests subcommand of newCommand's command
// with args and returns what it prints.
func manifestsOutput(t *testing.T, newCommand func() *cobra.Command, args ...string) string {
	t.Helper()
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"manifests"}, args...))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkManifestsOutput checks that out holds every one of wants and
// objects YAML documents (why says which).
func checkManifestsOutput(t *testing.T, out string, objects int, why string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("manifests output lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != objects-1 {
		t.Errorf("manifests output has %d separators, want %d (%d objects: %s)", n, objects-1, objects, why)
	}
}

// checkValidatesBeforeConnecting checks that deploy, delete and manifests
// of newCommand's command refuse --flag value with ErrInvalidOptions and
// want, before they read the kubeconfig (an unreachable one).
func checkValidatesBeforeConnecting(t *testing.T, newCommand func() *cobra.Command, flag, value, want string) {
	t.Helper()
	for _, sub := range []string{"manifests", "deploy", "delete"} {
		cmd := newCommand()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs([]string{sub, "--" + flag, value, "--kubeconfig", "/nonexistent/kubeconfig"})
		err := cmd.Execute()
		if !errors.Is(err, deploy.ErrInvalidOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s --%s %s: got %v, want ErrInvalidOptions with %q", sub, flag, value, err, want)
		}
	}
}
