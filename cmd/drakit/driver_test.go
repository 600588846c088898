package main

import (
	"bytes"
	"reflect"
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
	covered := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		before := opts
		value := map[string]string{"string": "/x/" + f.Name, "int": "4242", "duration": "7m3s"}[f.Value.Type()]
		if value == "" {
			t.Fatalf("flag --%s has unexpected type %s", f.Name, f.Value.Type())
		}
		if err := fs.Set(f.Name, value); err != nil {
			t.Fatalf("set --%s: %v", f.Name, err)
		}
		var changed []string
		b, a := reflect.ValueOf(before), reflect.ValueOf(opts)
		for i := range b.NumField() {
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
	typ := reflect.TypeOf(opts)
	for i := range typ.NumField() {
		if _, ok := covered[typ.Field(i).Name]; !ok {
			t.Errorf("Options.%s has no flag", typ.Field(i).Name)
		}
	}
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
	if n := strings.Count(out.String(), "\n---\n"); n != 5 {
		t.Errorf("manifests output has %d separators, want 5 (6 objects)", n)
	}

	cmd = newDriverCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"manifests", "--driver-root", "/"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "DriverRoot must not be /") {
		t.Errorf("manifests with --driver-root /: got %v", err)
	}
}
