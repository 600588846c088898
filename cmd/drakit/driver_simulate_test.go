package main

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/reference/driver"
)

// TestDriverSimulateFlagsMapOneToOne: every flag sets exactly one field of
// driver.SimulationConfig and every field has a flag (the shared helper does
// not set bool flags, so this test does it itself).
func TestDriverSimulateFlagsMapOneToOne(t *testing.T) {
	t.Setenv("DRAKIT_KUBECONFIG", "/env/kubeconfig")
	cfg := driver.DefaultSimulationConfig()
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	bindSimulateFlags(fs, &cfg)
	if cfg.Kubeconfig != "/env/kubeconfig" {
		t.Errorf("kubeconfig default %q, want $DRAKIT_KUBECONFIG", cfg.Kubeconfig)
	}
	values := map[string]string{"string": "/x/", "int": "4242", "bool": "true", "duration": "7m3s"}
	seen := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		before := cfg
		value, ok := values[f.Value.Type()]
		if !ok {
			t.Fatalf("flag --%s has unexpected type %s", f.Name, f.Value.Type())
		}
		if f.Value.Type() == "string" {
			value += f.Name
		}
		if err := fs.Set(f.Name, value); err != nil {
			t.Fatalf("set --%s: %v", f.Name, err)
		}
		b, a := reflect.ValueOf(before), reflect.ValueOf(cfg)
		var changed []string
		for i := range b.NumField() {
			if !reflect.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
				changed = append(changed, b.Type().Field(i).Name)
			}
		}
		if len(changed) != 1 {
			t.Errorf("--%s changed %v, want one field", f.Name, changed)
			return
		}
		if other, dup := seen[changed[0]]; dup {
			t.Errorf("field %s set by --%s and --%s", changed[0], other, f.Name)
		}
		seen[changed[0]] = f.Name
	})
	if n := reflect.TypeFor[driver.SimulationConfig]().NumField(); len(seen) != n {
		t.Errorf("%d of %d SimulationConfig fields have a flag: %v", len(seen), n, seen)
	}
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
		{[]string{"simulate", "--nodes", "2", "--profile", "no-such-profile", "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
	} {
		cmd := newDriverCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("drakit driver %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.wantErr)
		}
		if tc.wantErr != "/nonexistent/kubeconfig" && !errors.Is(err, driver.ErrInvalidSimulationConfig) {
			t.Errorf("drakit driver %s: error %v is not ErrInvalidSimulationConfig", strings.Join(tc.args, " "), err)
		}
	}
}
