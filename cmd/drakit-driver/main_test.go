package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"drakit.dev/drakit/internal/drivercmd"
)

// clearTwins unsets, for the rest of the test, the environment twin of
// every flag of every kind and of its controller (restored when it ends).
func clearTwins(t *testing.T) {
	t.Helper()
	twins := []string{"DRIVER_KIND"}
	collect := func(f *drivercmd.Flags) {
		f.FlagSet().VisitAll(func(fl *pflag.Flag) {
			if _, env, ok := strings.Cut(fl.Usage, "(env "); ok {
				twins = append(twins, strings.TrimSuffix(env, ")"))
			}
		})
	}
	for _, k := range kinds {
		f := drivercmd.New("twins")
		_, kubelet, _ := k.plugin(f)
		f.Kubelet(kubelet)
		collect(f)
		if k.controller != nil {
			c := drivercmd.New("twins")
			_, name, kubeconfig, _ := k.controller(c)
			c.String(name, "driver-name", "DRIVER_NAME", "")
			c.String(kubeconfig, "kubeconfig", "KUBECONFIG", "")
			collect(c)
		}
	}
	for _, name := range twins {
		t.Setenv(name, "") // restored when the test ends
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// leaves are the leaf fields of the struct v (the fields of an embedded
// struct, such as pluginharness.Kubelet, one by one) by name.
func leaves(v reflect.Value, prefix string, out map[string]reflect.Value) map[string]reflect.Value {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			leaves(v.Field(i), prefix+f.Name+".", out)
			continue
		}
		out[prefix+f.Name] = v.Field(i)
	}
	return out
}

// checkOneToOne checks that each flag of fs sets exactly one leaf field of
// the struct *cfg, no two flags the same, and that every field has a flag:
// the flags bind to the kind's Config once.
func checkOneToOne(t *testing.T, fs *pflag.FlagSet, cfg any) {
	t.Helper()
	v := reflect.ValueOf(cfg).Elem()
	covered := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Name {
		case "kind", "v", "vmodule", "logging-format", "log-flush-frequency":
			return // the command's and the logging flags
		}
		before := map[string]any{}
		for name, field := range leaves(v, "", map[string]reflect.Value{}) {
			before[name] = reflect.ValueOf(field.Interface()).Interface()
			if m, ok := before[name].(map[string]string); ok {
				before[name] = fmt.Sprint(m)
			}
		}
		value := map[string]string{
			"string": "/x/" + f.Name, "int": "42", "duration": "7m3s", "bool": fmt.Sprint(f.DefValue != "true"),
			"stringToString": "a=b", "shapes": "2x2x1",
		}[f.Value.Type()]
		if err := fs.Set(f.Name, value); err != nil {
			t.Fatalf("set --%s=%s: %v", f.Name, value, err)
		}
		var changed []string
		for name, field := range leaves(v, "", map[string]reflect.Value{}) {
			now := field.Interface()
			if m, ok := now.(map[string]string); ok {
				now = fmt.Sprint(m)
			}
			if !reflect.DeepEqual(before[name], now) {
				changed = append(changed, name)
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
	for name := range leaves(v, "", map[string]reflect.Value{}) {
		if _, ok := covered[name]; !ok {
			t.Errorf("%s.%s has no flag", v.Type(), name)
		}
	}
}

// TestEveryKindBindsItsConfig: for every kind, the command's flags (the
// harness's, bound once, and the kind's own) set each field of the kind's
// Config, one flag a field; so do the controllers' of theirs.
func TestEveryKindBindsItsConfig(t *testing.T) {
	clearTwins(t)
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			f := drivercmd.New("drakit-driver")
			cfg, kubelet, _ := k.plugin(f)
			f.Kubelet(kubelet)
			checkOneToOne(t, f.FlagSet(), cfg)
			if k.controller == nil {
				return
			}
			c := drivercmd.New("drakit-driver controller")
			ccfg, driverName, kubeconfig, _ := k.controller(c)
			c.String(driverName, "driver-name", "DRIVER_NAME", "")
			c.String(kubeconfig, "kubeconfig", "KUBECONFIG", "")
			checkOneToOne(t, c.FlagSet(), ccfg)
		})
	}
}

// TestKindAndTwins: --kind picks the kind (and DRIVER_KIND, which a flag
// overrides), a flag wins over its twin, a twin that does not parse and a
// bad flag are errors, and each kind validates its Config before it starts.
func TestKindAndTwins(t *testing.T) {
	clearTwins(t)
	t.Setenv("NODE_NAME", "node-a")
	for _, tc := range []struct {
		args     []string
		env, val string
		want     string
	}{
		{[]string{"--kind=fpga"}, "", "", `--kind "fpga": want cpu, gpu, nic, plain, tpu`},
		{nil, "DRIVER_KIND", "fpga", `--kind "fpga"`},
		{[]string{"--kind", "nic", "--vfs-per-pf=-2"}, "", "", "VFsPerPF -2 is not between 0 and 256"},
		{[]string{"--vfs-per-pf=-2"}, "DRIVER_KIND", "nic", "VFsPerPF -2 is not between 0 and 256"},
		{[]string{"--kind=gpu", "--vfs-per-pf=2"}, "DRIVER_KIND", "nic", "unknown flag: --vfs-per-pf"},
		{[]string{"--kind=nic", "--vfs-per-pf=many"}, "", "", `invalid argument "many" for "--vfs-per-pf" flag`},
		{[]string{"--kind=nic"}, "VF_TIMEOUT", "long", `parse env VF_TIMEOUT="long"`},
		{[]string{"--kind=nic"}, "DEVICE_IPS", "nic-0", `parse env DEVICE_IPS="nic-0": "nic-0" is not <device>=<cidr>`},
		{[]string{"--kind=plain", "extra"}, "", "", `unexpected arguments ["extra"]`},
		{[]string{"--kind=plain", "--defect=slow"}, "", "", `unknown defect "slow" (known: extra-device,`},
		{[]string{"--kind=plain"}, "DEVICES", "four", `parse env DEVICES="four"`},
		{[]string{"--kind=cpu", "--host-root=relative"}, "", "", "HostRoot"},
		{[]string{"--kind=tpu", "--http-endpoint=0.0.0.0:1"}, "", "", "--http-endpoint"},
		{[]string{"controller", "--kind=nic"}, "", "", "--kind nic has no controller (gpu and tpu have)"},
		{[]string{"controller", "--kind=tpu", "--shapes=2x2x0"}, "", "", "--shapes"},
	} {
		if tc.env != "" {
			t.Setenv(tc.env, tc.val)
		}
		if err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q (%s=%q): error %v, want %q", tc.args, tc.env, tc.val, err, tc.want)
		}
		if tc.env != "" {
			os.Unsetenv(tc.env)
		}
	}
}

// TestTwinsAndFlags: a twin sets its field, a flag wins over it, and
// --kind is read before the kind's flags wherever it stands.
func TestTwinsAndFlags(t *testing.T) {
	clearTwins(t)
	t.Setenv("VF_TIMEOUT", "9s")
	t.Setenv("VFS_PER_PF", "7")
	f := drivercmd.New("drakit-driver")
	cfg, kubelet, _ := kinds[kindOf([]string{"--vfs-per-pf=2", "--kind", "nic"})].plugin(f)
	f.Kubelet(kubelet)
	if _, _, err := f.Parse([]string{"--vfs-per-pf=2", "--driver-name=nic.example.com"}); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(cfg).Elem()
	if got := v.FieldByName("VFsPerPF").Int(); got != 2 {
		t.Errorf("VFsPerPF %d, want the flag's 2", got)
	}
	if got := time.Duration(v.FieldByName("VFTimeout").Int()); got != 9*time.Second {
		t.Errorf("VFTimeout %s, want the twin's 9s", got)
	}
	if kubelet.DriverName != "nic.example.com" {
		t.Errorf("DriverName %q", kubelet.DriverName)
	}
	if k := kindOf([]string{"--node-name", "n", "--kind=tpu", "--v=4"}); k != "tpu" {
		t.Errorf("kind %q, want tpu", k)
	}
}
