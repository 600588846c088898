package driver

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/reference/deploy"
)

// TestDriverFlagsMapOntoOptions checks that every deploy.Options field has
// exactly one flag and every flag sets exactly one field.
func TestDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultOptions()
	fs := pflag.NewFlagSet("driver", pflag.ContinueOnError)
	bindDriverFlags(fs, &opts)
	clitest.CheckFlagsMapOneToOne(t, fs, &opts)
}

func TestDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "/env/emulator")
	out := manifestsOutput(t, NewDriverCommand, "--kubelet-root-dir", "/run/k/kubelet", "--cdi-dir", "/run/k/cdi")
	checkManifestsOutput(t, out, 9, "an admission policy and its binding, two DeviceClasses",
		"path: /env/emulator\n",
		"path: /run/k/kubelet/plugins_registry\n",
		"path: /run/k/kubelet/plugins/gpu.drakit.dev\n",
		"path: /run/k/cdi\n",
		"kind: DeviceClass",
	)
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
		checkValidatesBeforeConnecting(t, NewDriverCommand, tc.flag, tc.value, tc.want)
	}
}

func TestDriverManifestsPrivileged(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		return manifestsOutput(t, NewDriverCommand, args...)
	}
	if got := run(); !strings.Contains(got, "privileged: false\n") || !strings.Contains(got, "- MKNOD\n") {
		t.Errorf("default manifests are not least privilege:\n%s", got)
	}
	if got := run("--privileged"); !strings.Contains(got, "privileged: true\n") || strings.Contains(got, "capabilities:") {
		t.Errorf("--privileged manifests are not privileged:\n%s", got)
	}
}
