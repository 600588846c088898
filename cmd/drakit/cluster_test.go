package main

import (
	"bytes"
	"os/exec"
	"reflect"
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
	covered := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		before := cfg
		value := map[string]string{"string": "/x/" + f.Name, "int": "4242", "duration": "7m3s"}[f.Value.Type()]
		if value == "" {
			t.Fatalf("flag --%s has unexpected type %s", f.Name, f.Value.Type())
		}
		if err := fs.Set(f.Name, value); err != nil {
			t.Fatalf("set --%s: %v", f.Name, err)
		}
		var changed []string
		b, a := reflect.ValueOf(before), reflect.ValueOf(cfg)
		for i := 0; i < b.NumField(); i++ {
			if !reflect.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
				changed = append(changed, b.Type().Field(i).Name)
			}
		}
		if len(changed) != 1 {
			t.Errorf("--%s changed fields %v, want exactly one", f.Name, changed)
			return
		}
		if other, dup := covered[changed[0]]; dup {
			t.Errorf("field %s is set by --%s and --%s", changed[0], other, f.Name)
		}
		covered[changed[0]] = f.Name
	})
	typ := reflect.TypeOf(cfg)
	for i := 0; i < typ.NumField(); i++ {
		if _, ok := covered[typ.Field(i).Name]; !ok {
			t.Errorf("Config.%s has no flag", typ.Field(i).Name)
		}
	}
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
