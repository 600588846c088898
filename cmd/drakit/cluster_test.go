package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/cluster"
)

// TestClusterFlagsMapOntoConfig checks that every cluster.Config field has
// exactly one flag and every flag sets exactly one field.
func TestClusterFlagsMapOntoConfig(t *testing.T) {
	cfg := cluster.DefaultConfig()
	fs := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	bindClusterFlags(fs, &cfg)
	checkFlagsMapOneToOne(t, fs, &cfg)
	if cfg.StopTimeout != 7*time.Minute+3*time.Second {
		t.Errorf("--stop-timeout did not reach Config.StopTimeout: %v", cfg.StopTimeout)
	}
}

// TestStatusEnvOutputIsShell checks that `status -o env` output, evaluated
// by sh, yields the paths verbatim, quotes included.
func TestStatusEnvOutputIsShell(t *testing.T) {
	st := cluster.State{Up: true, RunDir: "/tmp/it's here", Kubeconfig: "/a b/kubeconfig", CDIDir: "/c$HOME", EmulatorRoot: "/e", KubeletRootDir: "/k"}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "env"); err != nil {
		t.Fatal(err)
	}
	script := buf.String() + `printf '%s\n' "$DRAKIT_CLUSTER_UP" "$DRAKIT_RUN_DIR" "$DRAKIT_KUBECONFIG" "$DRAKIT_CDI_DIR" "$DRAKIT_EMULATOR_ROOT" "$DRAKIT_KUBELET_ROOT_DIR"`
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, script)
	}
	want := "true\n/tmp/it's here\n/a b/kubeconfig\n/c$HOME\n/e\n/k\n"
	if string(out) != want {
		t.Errorf("evaluated env output = %q, want %q", out, want)
	}
	if err := printStatus(&buf, st, "yaml"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("unknown output format: err %v", err)
	}
}
