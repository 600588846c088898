package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/reference/deploy"
)

// TestDriverFlagsMapOntoOptions checks that every deploy.Options field has
// exactly one flag and every flag sets exactly one field.
func TestDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultOptions()
	fs := pflag.NewFlagSet("driver", pflag.ContinueOnError)
	bindDriverFlags(fs, &opts)
	checkFlagsMapOneToOne(t, fs, &opts)
}

func TestDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "/env/emulator")
	cmd := newDriverCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"manifests", "--kubelet-root-dir", "/run/k/kubelet", "--cdi-dir", "/run/k/cdi"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"path: /env/emulator\n",
		"path: /run/k/kubelet/plugins_registry\n",
		"path: /run/k/kubelet/plugins/gpu.drakit.dev\n",
		"path: /run/k/cdi\n",
		"kind: DeviceClass",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("manifests output lacks %q", want)
		}
	}
	if n := strings.Count(out.String(), "\n---\n"); n != 8 {
		t.Errorf("manifests output has %d separators, want 8 (9 objects: an admission policy and its binding, two DeviceClasses)", n)
	}
}

// TestDriverRefusesSystemDirectories: no host path flag may name a system
// directory (it would be mounted into the driver pod), and the error names
// the flag; deploy and delete refuse them before contacting a cluster.
func TestDriverRefusesSystemDirectories(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"cdi-dir", "/etc", `CDIDir (--cdi-dir) "/etc" is a system directory: the driver pod would mount it from the host`},
		{"driver-root", "/", `DriverRoot (--driver-root) "/" is a system directory`},
		{"kubelet-root-dir", "/var", `KubeletRootDir (--kubelet-root-dir) "/var" is a system directory`},
		{"cdi-dir", "/usr/share/cdi", `CDIDir (--cdi-dir) "/usr/share/cdi" lies in /usr, a system directory`},
		{"driver-root", "relative", `DriverRoot (--driver-root) "relative" must be a clean absolute path`},
	} {
		for _, sub := range []string{"manifests", "deploy", "delete"} {
			cmd := newDriverCommand()
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			// An unreachable kubeconfig: validation must fail first.
			cmd.SetArgs([]string{sub, "--" + tc.flag, tc.value, "--kubeconfig", "/nonexistent/kubeconfig"})
			err := cmd.Execute()
			if !errors.Is(err, deploy.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s --%s %s: got %v, want ErrInvalidOptions with %q", sub, tc.flag, tc.value, err, tc.want)
			}
		}
	}
}

func TestDriverManifestsPrivileged(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		cmd := newDriverCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(append([]string{"manifests"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := run(); !strings.Contains(got, "privileged: false\n") || !strings.Contains(got, "- MKNOD\n") {
		t.Errorf("default manifests are not least privilege:\n%s", got)
	}
	if got := run("--privileged"); !strings.Contains(got, "privileged: true\n") || strings.Contains(got, "capabilities:") {
		t.Errorf("--privileged manifests are not privileged:\n%s", got)
	}
}
