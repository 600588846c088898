package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/reference/deploy"
)

// TestPlainDriverFlagsMapOntoOptions checks that every deploy.PlainOptions
// field has exactly one flag and every flag sets exactly one field.
func TestPlainDriverFlagsMapOntoOptions(t *testing.T) {
	opts := deploy.DefaultPlainOptions()
	fs := pflag.NewFlagSet("plain-driver", pflag.ContinueOnError)
	bindPlainDriverFlags(fs, &opts)
	checkFlagsMapOneToOne(t, fs, &opts)
}

func TestPlainDriverManifestsCommand(t *testing.T) {
	t.Setenv("DRAKIT_RUN_DIR", "/run/k")
	t.Setenv("DRAKIT_CDI_DIR", "/run/k/cdi")
	t.Setenv("DRAKIT_KUBELET_ROOT_DIR", "/run/k/kubelet")
	cmd := newPlainDriverCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"manifests", "--defect", "leave-cdi-spec", "--devices", "3"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"path: /run/k/plain-driver\n",
		"path: /run/k/kubelet/plugins_registry\n",
		"path: /run/k/kubelet/plugins/plain.drakit.dev\n",
		"path: /run/k/cdi\n",
		"- --defect=leave-cdi-spec\n",
		"- --devices=3\n",
		"kind: DeviceClass",
		"namespace: drakit-plain\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("manifests output lacks %q", want)
		}
	}
	if n := strings.Count(out.String(), "\n---\n"); n != 7 {
		t.Errorf("manifests output has %d separators, want 7 (8 objects: an admission policy and its binding, one DeviceClass)", n)
	}
	if strings.Contains(out.String(), "MKNOD") || strings.Contains(out.String(), "privileged: true") {
		t.Errorf("plain driver manifests grant privileges:\n%s", out.String())
	}
}

// TestPlainDriverValidatesBeforeConnecting: deploy, delete and manifests
// refuse bad flags, naming them, before the kubeconfig is read.
func TestPlainDriverValidatesBeforeConnecting(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"defect", "slow", `Defect (--defect): unknown defect "slow" (known: extra-device, leave-cdi-spec, duplicate-device-names; empty for none)`},
		{"devices", "0", "Devices (--devices): 0 devices: must be between 1 and 128"},
		{"state-dir", "/etc", `StateDir (--state-dir) "/etc" is a system directory`},
	} {
		for _, sub := range []string{"manifests", "deploy", "delete"} {
			cmd := newPlainDriverCommand()
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
