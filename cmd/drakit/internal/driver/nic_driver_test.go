package driver

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cmd/drakit/internal/cli/clitest"
	"drakit.dev/drakit/reference/deploy"
)

// TestNICDriverFlagsMapOntoOptions checks that every deploy.NICOptions
// field has exactly one flag and every flag sets exactly one field.
func TestNICDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultNICOptions()
	fs := pflag.NewFlagSet("nic-driver", pflag.ContinueOnError)
	bindNICDriverFlags(fs, &opts)
	clitest.CheckFlagsMapOneToOne(t, fs, &opts)
}

func TestNICDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "/run/k/emulator")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	out := manifestsOutput(t, NewNICDriverCommand, "--vfs-per-pf", "2")
	checkManifestsOutput(t, out, 9, "an admission policy and its binding, two DeviceClasses",
		"path: /run/k/emulator/sys\n",
		"path: /run/k/kubelet/plugins_registry\n",
		"path: /run/k/kubelet/plugins/nic.drakit.dev\n",
		"path: /run/k/cdi\n",
		"- --host-root=/run/k/emulator\n",
		"- --vfs-per-pf=2\n",
		"- /usr/bin/drakit-nic-driver\n",
		"name: vf.nic.drakit.dev\n",
		"- associated-node:patch\n",
		"namespace: drakit-nic\n",
	)
	if strings.Contains(out, "MKNOD") || strings.Contains(out, "privileged: true") || strings.Contains(out, "arbitrary-node") {
		t.Errorf("NIC driver manifests grant privileges:\n%s", out)
	}
}

// TestNICDriverValidatesBeforeConnecting: deploy, delete and manifests
// refuse bad flags, naming them, before the kubeconfig is read.
func TestNICDriverValidatesBeforeConnecting(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"vfs-per-pf", "-1", "VFsPerPF (--vfs-per-pf) -1 is not between 0 and 256"},
		{"host-root", "/sys", `HostRoot (--host-root) "/sys" is a system directory`},
	} {
		checkValidatesBeforeConnecting(t, NewNICDriverCommand, tc.flag, tc.value, tc.want)
	}
}
