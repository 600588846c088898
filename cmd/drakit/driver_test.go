package main

import (
	"bytes"
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
	if n := strings.Count(out.String(), "\n---\n"); n != 6 {
		t.Errorf("manifests output has %d separators, want 6 (7 objects: two DeviceClasses)", n)
	}

	cmd = newDriverCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"manifests", "--driver-root", "/"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "DriverRoot must not be /") {
		t.Errorf("manifests with --driver-root /: got %v", err)
	}
}
