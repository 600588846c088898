package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/reference/deploy"
)

// TestNICDriverFlagsMapOntoOptions checks that every deploy.NICOptions
// field has exactly one flag and every flag sets exactly one field.
func TestNICDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultNICOptions()
	fs := pflag.NewFlagSet("nic-driver", pflag.ContinueOnError)
	bindNICDriverFlags(fs, &opts)
	checkFlagsMapOneToOne(t, fs, &opts)
}

func TestNICDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_EMULATOR_ROOT", "/run/k/emulator")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	cmd := newNICDriverCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"manifests", "--vfs-per-pf", "2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
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
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("manifests output lacks %q", want)
		}
	}
	if n := strings.Count(out.String(), "\n---\n"); n != 8 {
		t.Errorf("manifests output has %d separators, want 8 (9 objects: an admission policy and its binding, two DeviceClasses)", n)
	}
	if strings.Contains(out.String(), "MKNOD") || strings.Contains(out.String(), "privileged: true") || strings.Contains(out.String(), "arbitrary-node") {
		t.Errorf("NIC driver manifests grant privileges:\n%s", out.String())
	}
}

// TestNICDriverValidatesBeforeConnecting: deploy, delete and manifests
// refuse bad flags, naming them, before the kubeconfig is read.
func TestNICDriverValidatesBeforeConnecting(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"vfs-per-pf", "-1", "VFsPerPF (--vfs-per-pf) -1 is not between 0 and 256"},
		{"host-root", "/sys", `HostRoot (--host-root) "/sys" is a system directory`},
	} {
		for _, sub := range []string{"manifests", "deploy", "delete"} {
			cmd := newNICDriverCommand()
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs([]string{sub, "--" + tc.flag, tc.value, "--kubeconfig", "/nonexistent/kubeconfig"})
			err := cmd.Execute()
			if !errors.Is(err, deploy.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s --%s %s: got %v, want ErrInvalidOptions with %q", sub, tc.flag, tc.value, err, tc.want)
			}
		}
	}
}
