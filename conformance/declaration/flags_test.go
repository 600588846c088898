package declaration

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// parseFlags binds every driver flag and --set to a flag set, as a command
// does, and parses args.
func parseFlags(t *testing.T, args ...string) *Overrides {
	t.Helper()
	o := &Overrides{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	for _, f := range Flags() {
		fs.Var(o.Value(f), f.Name, FlagUsage(f))
	}
	fs.Var(o.SetValue(), SetFlag, SetFlagUsage)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o
}

// TestFlagsAloneDescribeADriver builds the reference driver's settings from
// flags alone, without a file: the conventions fill the rest.
func TestFlagsAloneDescribeADriver(t *testing.T) {
	t.Parallel()
	o := parseFlags(t, "-driver", "gpu.drakit.dev", "-uuid-attribute", "uuid", "-device-env-prefix", "DRAKIT_DEVICE_",
		"-capabilities", "partitionableDevices,adminAccess", "-partition-class", "mig.gpu.drakit.dev",
		"-profile-attribute", "profile", "-parent-uuid-attribute", "parentUUID", "-memory-capacity", "memory",
		"-driver-pod-selector", "app=d", "-hardware", "-set", "deviceKinds[whole].mounts[0].path=/run/gpu/{device}",
		"-set", "deviceKinds[whole].observers=cdi,env,mounts")
	d, err := o.Declaration("")
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		DriverName: "gpu.drakit.dev", Capabilities: []string{"partitionableDevices", "adminAccess"},
		DeviceClassName: "gpu.drakit.dev", UUIDAttribute: "uuid", DeviceEnvPrefix: "DRAKIT_DEVICE_",
		PartitionClassName: "mig.gpu.drakit.dev", ProfileAttribute: "profile", ParentUUIDAttribute: "parentUUID",
		MemoryCapacity: "memory", DriverPodSelector: "app=d", Hardware: true, Observers: []string{"cdi", "env", "mounts"},
		Mounts: []Mount{{Path: "/run/gpu/{device}"}},
	}
	if diff := cmp.Diff(want, d.KitSettings(), cmpopts.IgnoreFields(Settings{}, "DeviceKindNames")); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if p := d.DeviceKinds[d.kindOfRole(RolePartitions)]; p.Identity.Attribute != "uuid" || p.Partitions.ParentKind != "devices" {
		t.Errorf("partition kind %+v: want identity uuid, parent devices", p)
	}
}

// TestFlagsOverrideTheFile writes flags over the reference driver's file:
// the flags' fields change, every other field stays the file's.
func TestFlagsOverrideTheFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(examplesDir, "reference-driver.yaml")
	fromFile, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseFlags(t, "-uuid-attribute", "serial", "-driver-namespace", "other", "-fault-responses", "48=Unhealthy").Declaration(file)
	if err != nil {
		t.Fatal(err)
	}
	want := fromFile.KitSettings()
	want.UUIDAttribute, want.DriverNamespace, want.FaultResponses = "serial", "other", []string{"48=Unhealthy"}
	if diff := cmp.Diff(want, d.KitSettings()); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if d, err := parseFlags(t).Declaration(file); err != nil || !cmp.Equal(fromFile.KitSettings(), d.KitSettings()) {
		t.Errorf("no flags: %v, settings differ from the file's", err)
	}
}

// TestFlagErrorsNameTheFlag checks that what is missing or wrong names the
// flag that sets it, the field, and for a file its line.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		file string
		want []string
	}{
		{name: "nothing", want: []string{"--driver: driver.name: Required value", "--uuid-attribute: deviceKinds[0].identity.attribute: Required value"}},
		{name: "bad driver name", args: []string{"-driver", "Not_A_Name", "-uuid-attribute", "uuid"}, want: []string{"--driver: driver.name: Invalid value"}},
		{name: "partitions unclaimed", args: []string{"-driver", "d.example.com", "-uuid-attribute", "uuid", "-partition-class", "p.example.com", "-profile-attribute", "p", "-parent-uuid-attribute", "u"},
			want: []string{"partitionableDevices"}},
		{name: "unknown field", args: []string{"-set", "deviceKinds[whole].colour=red"}, want: []string{"--set: ", "deviceKinds[0] has no field \"colour\"", "identity"}},
		{name: "bad role", args: []string{"-set", "deviceKinds[biggest].name=x"}, want: []string{"a role (whole, partitions, shared)"}},
		{name: "not a list", args: []string{"-set", "driver[0].name=x"}, want: []string{"driver is neither a list nor a map"}},
		{name: "section", args: []string{"-set", "driver.pods=x"}, want: []string{"is a section (fields: namespace, selector)"}},
		{name: "bad bool", args: []string{"-set", "deviceKinds[whole].mounts[0].readOnly=maybe"}, want: []string{`"maybe" is not true or false`}},
		{name: "bad JSON", args: []string{"-set", "deviceKinds[whole].opaqueConfig.parameters={"}, want: []string{"is not JSON"}},
		{name: "index beyond", args: []string{"-set", "deviceKinds[3].name=x"}, want: []string{"index 3 is beyond the next"}},
		{name: "file and flag", file: filepath.Join(examplesDir, "reference-driver.yaml"), args: []string{"-memory-capacity", "not a name"},
			want: []string{"--memory-capacity: deviceKinds[0].memoryCapacity: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseFlags(t, tc.args...).Declaration(tc.file)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestEveryFlagWritesAField sets each flag on a declaration built from
// flags: its path leads to a field, and KitSettings reads what it wrote.
func TestEveryFlagWritesAField(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, f := range Flags() {
		if names[f.Name] {
			t.Errorf("flag %s is in the table twice", f.Name)
		}
		names[f.Name] = true
		d := &Declaration{}
		value := map[string]string{"capabilities": "adminAccess", "fault-responses": "48=Unhealthy"}[f.Name]
		switch {
		case f.Switch:
			value = f.On
		case value == "":
			value = "v"
		}
		if err := d.Set(f.Path, value); err != nil {
			t.Errorf("flag %s: %v", f.Name, err)
			continue
		}
		if _, ok := d.Resolve(f.Path); !ok {
			t.Errorf("flag %s: path %s does not resolve after it was set", f.Name, f.Path)
		}
		if cmp.Equal(d.KitSettings(), (&Declaration{}).KitSettings(), cmpopts.EquateEmpty()) && f.Path != "deviceKinds[partitions].partitions.profileAttribute" &&
			f.Path != "deviceKinds[partitions].partitions.parentIdentityAttribute" {
			t.Errorf("flag %s: the kit's settings do not show what %s wrote", f.Name, f.Path)
		}
	}
}

// FuzzSet checks that no path or value makes Set panic, and that a
// declaration Set wrote goes through Default, Validate and KitSettings.
func FuzzSet(f *testing.F) {
	for _, fl := range Flags() {
		f.Add(fl.Path, "x,y")
	}
	f.Add("deviceKinds[0].faults[0]", "48=Unhealthy/NoExecute")
	f.Add("capabilities[adminAccess]", "true")
	f.Add("deviceKinds[whole].opaqueConfig.parameters", `{"a":1}`)
	f.Add("a[", "")
	f.Fuzz(func(t *testing.T, path, value string) {
		d := &Declaration{}
		if err := d.Set(path, value); err != nil {
			return
		}
		d.Default()
		_ = d.Validate()
		d.KitSettings()
	})
}
