package declaration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/internal/strictyaml"
)

// sameDeclaration compares declarations by content: not the source and
// lines Parse records, and an empty list or map like none.
var sameDeclaration = cmp.Options{cmpopts.IgnoreUnexported(Declaration{}), cmpopts.EquateEmpty()}

func TestInvalidDeclarations(t *testing.T) {
	t.Parallel()
	// Every testdata/invalid-*.yaml must appear here. For field problems
	// want has one substring per problem, in order; for a problem of the
	// file as a whole one substring of the error and its sentinel.
	tests := map[string]struct {
		want     []string
		sentinel error
	}{
		"api-version":     {want: []string{`line 2: apiVersion: Unsupported value: "conformance.drakit.dev/v1"`}},
		"kind":            {want: []string{`line 3: kind: Unsupported value: "DriverConfig"`}},
		"syntax":          {want: []string{"yaml: line 7: did not find expected ',' or ']'"}, sentinel: strictyaml.ErrSyntax},
		"duplicate-key":   {want: []string{`line 6: key "name" already set`}, sentinel: strictyaml.ErrSyntax},
		"second-document": {want: []string{"line 12: a second YAML document"}, sentinel: strictyaml.ErrMultipleDocuments},
		"not-mapping":     {want: []string{"the document must be a mapping"}, sentinel: strictyaml.ErrNotMapping},
		"unknown-field":   {want: []string{"line 8: deviceKinds[0].deviceClas: Forbidden: unknown field; known fields: deviceClass, deviceNodes, faultCommand, faults, identity"}},
		"case-field":      {want: []string{"line 8: deviceKinds[0].DeviceClass: Forbidden: unknown field"}},
		"wrong-type": {want: []string{
			"line 11: deviceKinds[0].observers: Invalid value: \"cdi\": must be a list",
			"line 12: hardware: Invalid value: 1: must be a string",
		}},
		"driver-name":          {want: []string{`line 5: driver.name: Invalid value: "GPU_Example.com": a lowercase RFC 1123 subdomain`}},
		"driver-name-too-long": {want: []string{"line 5: driver.name: Too long: may not be more than 63"}},
		"missing-driver":       {want: []string{"driver.name: Required value"}},
		"version":              {want: []string{`line 6: driver.version: Invalid value: "1.0 beta": must be printable without spaces`}},
		"pods": {want: []string{
			`line 7: driver.pods.namespace: Invalid value: "Example_System": a lowercase RFC 1123 label`,
			"line 6: driver.pods.selector: Required value",
		}},
		"faults": {want: []string{
			"line 13: deviceKinds[0].faults[0].fault: Required value",
			`line 14: deviceKinds[0].faults[1].health: Unsupported value: "Sick"`,
			`line 15: deviceKinds[0].faults[2].xid: Duplicate value: "48": also deviceKinds[0].faults[1].xid`,
			`line 15: deviceKinds[0].faults[2].taint: Unsupported value: "PreferNoSchedule"`,
			`line 16: deviceKinds[0].faults[3].fault: Duplicate value: "48": also deviceKinds[0].faults[1].xid`,
			`line 17: deviceKinds[0].faults[4].xid: Invalid value: 94: fault and xid name the same thing`,
			`line 18: deviceKinds[0].faults[5].fault: Invalid value: "link down": must be one word`,
		}},
		"fault-command": {want: []string{
			"line 9: deviceKinds[0].faultCommand: Required value",
			"line 17: deviceKinds[1].faultCommand: Forbidden: only with faults",
			`line 27: deviceKinds[2].faultCommand.inject[0]: Invalid value: "/opt/{node}/tpuctl": the program is fixed`,
			`line 27: deviceKinds[2].faultCommand.inject[3]: Invalid value: "{slot}": unknown placeholder {slot}; known: {device}, {identity}, {attribute:<name>}, {node}, {fault}`,
			"line 27: deviceKinds[2].faultCommand.inject: Invalid value: [\"/opt/{node}/tpuctl\",\"break\",\"--node={node}\",\"{slot}\"]: names no device",
			"line 27: deviceKinds[2].faultCommand.inject: Invalid value: [\"/opt/{node}/tpuctl\",\"break\",\"--node={node}\",\"{slot}\"]: several faults are declared: an argument needs {fault}",
			"line 28: deviceKinds[2].faultCommand.reset: Required value",
		}},
		"opaque-config": {want: []string{
			`line 12: deviceKinds[0].opaqueConfig.parameters: Invalid value: "[1,2]": must be a non-empty object`,
			"line 11: deviceKinds[0].opaqueConfig.env: Required value",
			`line 17: deviceKinds[1].opaqueConfig.parameters: Invalid value: "{}": must be a non-empty object`,
			`deviceKinds[1].opaqueConfig.env[1ST]: Invalid value: "1ST": must be an environment variable name`,
		}},
		"fabric": {want: []string{
			"line 10: fabric.cliqueAttribute: Required value",
			`line 11: fabric.channelClass: Invalid value: "IMEX_Channels": a lowercase RFC 1123 subdomain`,
		}},
		"pods-selector":            {want: []string{`line 7: driver.pods.selector: Invalid value: "app in (driver": unable to parse requirement`}},
		"pods-selector-everything": {want: []string{`line 7: driver.pods.selector: Invalid value: " ": selects every pod`}},
		"no-device-kinds":          {want: []string{"deviceKinds: Required value: at least one device kind"}},
		"pci": {want: []string{
			`line 12: deviceKinds[0].pci.vendor: Invalid value: "0x10DE": must be a PCI vendor ID of four lower-case hex digits`,
			`line 13: deviceKinds[0].pci.class: Invalid value: "030": must be two, four or six lower-case hex digits`,
		}},
		"kind-names": {want: []string{
			`line 7: deviceKinds[0].name: Invalid value: "GPU": a lowercase RFC 1123 label`,
			`line 11: deviceKinds[1].deviceClass: Duplicate value: "gpu.example.com": also deviceKinds[0].deviceClass`,
			`line 13: deviceKinds[2].name: Duplicate value: "gpu": also deviceKinds[1].name`,
			`line 14: deviceKinds[2].deviceClass: Invalid value: "Gpu..example.com": a lowercase RFC 1123 subdomain`,
		}},
		"missing-kind-fields": {want: []string{
			"line 7: deviceKinds[0].name: Required value",
			"line 7: deviceKinds[0].deviceClass: Required value",
			"line 7: deviceKinds[0].identity.attribute: Required value",
		}},
		"attribute-names": {want: []string{
			`line 10: deviceKinds[0].identity.attribute: Invalid value: "gpu-uuid": the name part must be a C identifier`,
			`line 11: deviceKinds[0].memoryCapacity: Invalid value: "Example_Domain/memory": the domain part must be a DNS subdomain`,
		}},
		"numa-nodes-attribute": {want: []string{
			`line 11: deviceKinds[0].numaNodesAttribute: Invalid value: "close-numa-nodes": the name part must be a C identifier`,
			`line 11: deviceKinds[0].numaNodesAttribute: Invalid value: "close-numa-nodes": a list attribute needs the capability listTypeAttributes (KEP-5491) claimed`,
			`line 15: deviceKinds[1].numaNodesAttribute: Invalid value: "closeNUMANodes": a list attribute needs the capability listTypeAttributes (KEP-5491) claimed`,
		}},
		"attribute-too-long": {want: []string{"line 10: deviceKinds[0].identity.attribute: Invalid value: \"gpu.example.com/uuuu"}},
		"env-name": {want: []string{
			`line 11: deviceKinds[0].identity.env.name: Invalid value: "GPU-DEVICE-{device}": "GPU-DEVICE-": outside placeholders a variable name has only letters, digits and "_"`,
			`line 16: deviceKinds[1].identity.env.name: Invalid value: "{device}_GPU": must start with a letter or "_"`,
			`line 21: deviceKinds[2].identity.env.name: Invalid value: "GPU_DEVICE": has no placeholder`,
			"line 26: deviceKinds[3].identity.env.name: Required value",
		}},
		"env-placeholders": {want: []string{
			`line 11: deviceKinds[0].identity.env.name: Invalid value: "GPU_{devise}": unknown placeholder {devise}; known: {device}, {identity}, {attribute:<name>}`,
			`line 16: deviceKinds[1].identity.env.name: Invalid value: "GPU_{device": placeholder "{device" is not closed`,
			`line 21: deviceKinds[2].identity.env.name: Invalid value: "GPU_}{device}": "}" outside a placeholder`,
			`line 26: deviceKinds[3].identity.env.name: Invalid value: "GPU_{attribute:bad-name}": placeholder {attribute:bad-name}: the name part must be a C identifier`,
			`line 31: deviceKinds[4].identity.env.value: Invalid value: "1": has no placeholder`,
		}},
		"env-not-observed": {want: []string{`line 12: deviceKinds[0].observers: Invalid value: ["cdi","nvml"]: identity.env is declared, so list the env observer`}},
		"injected": {want: []string{
			`line 13: deviceKinds[0].deviceNodes[0]: Invalid value: {"path":"/dev/gpu0"}: path "/dev/gpu0": has no placeholder`,
			`line 14: deviceKinds[0].deviceNodes[1]: Invalid value: {"path":"/var/gpu{device}"}: path "/var/gpu{device}": must be below /dev/`,
			`line 15: deviceKinds[0].deviceNodes[2]: Invalid value: {"path":"/dev/gpu{device}","type":"x","major":"1a","minor":"{attribute:minor}"}: type "x": must be "c" or "b"; major "1a": must be a decimal device number`,
			`line 16: deviceKinds[0].deviceNodes[3].path: Duplicate value: "/dev/gpu{device}": also deviceKinds[0].deviceNodes[2].path`,
			`line 18: deviceKinds[0].mounts[0]: Invalid value: {"path":"run/{device}"}: path "run/{device}": must be an absolute, clean path`,
			`line 19: deviceKinds[0].mounts[1]: Invalid value: {"path":"/run/{device}/../x"}: path "/run/{device}/../x": must be an absolute, clean path`,
			`line 23: deviceKinds[1].observers: Invalid value: ["cdi","mounts"]: deviceKinds[1].deviceNodes is declared, so list the deviceNodes observer`,
			`line 20: deviceKinds[1].mounts: Required value: the mounts observer checks the mounts`,
		}},
		"env-observer-without-env": {want: []string{"line 9: deviceKinds[0].identity.env: Required value: the env observer checks the variable declared here"}},
		"observers": {want: []string{
			`line 11: deviceKinds[0].observers[1]: Unsupported value: "smi": supported values: "cdi", "env", "deviceNodes", "mounts", "nvml"`,
			`line 11: deviceKinds[0].observers[2]: Duplicate value: "cdi": also deviceKinds[0].observers[0]`,
		}},
		"partitions-unclaimed": {want: []string{"line 14: deviceKinds[1].partitions: Forbidden: partitions need the capability partitionableDevices (KEP-4815) claimed"}},
		"partitions-fields": {want: []string{
			"line 14: deviceKinds[1].partitions.profileAttribute: Required value",
			`line 15: deviceKinds[1].partitions.parentIdentityAttribute: Invalid value: "parent.UUID"`,
		}},
		"parent-kind": {want: []string{
			`line 14: deviceKinds[1].partitions.parentKind: Invalid value: "mig": a kind cannot partition itself`,
			`line 18: deviceKinds[2].partitions.parentKind: Invalid value: "mig": names a kind of partitions`,
			`line 22: deviceKinds[3].partitions.parentKind: Not found: "tpu"`,
		}},
		"parent-kind-ambiguous": {want: []string{"line 17: deviceKinds[2].partitions.parentKind: Required value"}},
		"only-partitions": {want: []string{
			`line 10: deviceKinds[0].partitions.parentKind: Not found: "gpu"`,
			"line 6: deviceKinds: Required value: a device kind without partitions",
		}},
		"unknown-capability": {want: []string{`line 12: capabilities[partitionableDevice]: Unsupported value: "partitionableDevice": supported values: "deviceHealth"`}},
		"capability-requires": {want: []string{
			"line 13: capabilities[deviceCompatibilityGroups]: Invalid value: true: deviceCompatibilityGroups (KEP-5963) requires the capability partitionableDevices (KEP-4815) claimed too",
			"line 12: capabilities[deviceHealthMessages]: Invalid value: true: deviceHealthMessages (KEP-4680) requires the capability deviceHealth (KEP-4680) claimed too",
		}},
		"binding-conditions": {want: []string{
			`line 15: bindingConditions.conditions[1]: Invalid value: "not attached": name part must consist of alphanumeric characters`,
			`line 15: bindingConditions.conditions[2]: Duplicate value: "attached": also bindingConditions.conditions[0]`,
			`line 16: bindingConditions.failureConditions[1]: Invalid value: "attached": is also a binding condition: the lists must not overlap`,
			`line 17: bindingConditions.setBy: Invalid value: "driver": a driver that sets its binding conditions in status.devices needs the capability deviceStatus (KEP-4817) claimed`,
		}},
		"binding-conditions-limits": {want: []string{
			"line 14: bindingConditions.conditions: Too many: 5: must have at most 4 items",
			"bindingConditions.failureConditions: Required value",
			`line 15: bindingConditions.setBy: Unsupported value: "scheduler": supported values: "kit", "driver"`,
		}},
		"binding-conditions-unclaimed": {want: []string{"line 11: bindingConditions: Forbidden: binding conditions need the capability bindingConditions (KEP-5007) claimed"}},
		"binding-conditions-missing":   {want: []string{"line 12: capabilities[bindingConditions]: Invalid value: true: claimed, but the declaration has no bindingConditions"}},
		"claimed-without-partitions":   {want: []string{"line 12: capabilities[partitionableDevices]: Invalid value: true: claimed, but no device kind declares partitions"}},
		"hardware":                     {want: []string{`line 11: hardware: Unsupported value: "virtual": supported values: "emulated", "real"`}},
		"scenarios":                    {want: []string{`line 13: scenarios.tags: Invalid value: "@kep-4381 &&": "@kep-4381 &&" has an empty term`}},
		"missing-hardware":             {want: []string{"hardware: Required value"}},
		"torus": {want: []string{
			`line 13: torus.chipClass: Not found: "chips.tpu.example.com"`,
			`line 14: torus.subsliceClass: Invalid value: "tpu.example.com": is a device kind's class`,
			`line 15: torus.shapeAttribute: Invalid value: "tpu.example.com/sub-shape": the name part must be a C identifier`,
		}},
		"torus-missing": {want: []string{
			"torus.chipClass: Required value",
			"torus.subsliceClass: Required value",
			"torus.shapeAttribute: Required value",
		}},
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "invalid-"), ".yaml")
		if _, ok := tests[name]; !ok {
			t.Errorf("%s has no entry in the test table", f)
		}
	}
	if len(files) != len(tests) {
		t.Errorf("%d invalid files, %d table entries", len(files), len(tests))
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "invalid-"+name+".yaml")
			d, err := Load(path)
			if d != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid and no declaration, got %v, %v", d, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			var verr *ValidationError
			if tc.sentinel != nil {
				if !errors.Is(err, tc.sentinel) || errors.As(err, &verr) {
					t.Errorf("want a file error wrapping %v, got %#v", tc.sentinel, err)
				}
				if !strings.Contains(err.Error(), tc.want[0]) {
					t.Errorf("error %q does not contain %q", err, tc.want[0])
				}
				return
			}
			if !errors.As(err, &verr) {
				t.Fatalf("want a *ValidationError, got %v", err)
			}
			var got []string
			for _, p := range verr.Problems {
				got = append(got, p.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestValidDeclarations(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid declarations: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			d, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			// The defaulted declaration survives a round trip through YAML
			// unchanged: what the kit prints of it loads again.
			out, err := yaml.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(out, "marshalled "+f)
			if err != nil {
				t.Fatalf("parse marshalled declaration: %v\n%s", err, out)
			}
			if diff := cmp.Diff(d, again, sameDeclaration); diff != "" {
				t.Errorf("round trip changed the declaration (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	d := &Declaration{
		Driver: Driver{Name: "gpu.example.com"},
		DeviceKinds: []DeviceKind{
			{Name: "gpu", DeviceClass: "gpu.example.com", Identity: Identity{Attribute: "uuid"}},
			{Name: "nic", DeviceClass: "nic.example.com", Identity: Identity{Attribute: "mac", Env: &EnvVariable{Name: "NIC_{device}"}}},
			{Name: "mig", DeviceClass: "mig.example.com", Identity: Identity{Attribute: "uuid"},
				Partitions: &Partitions{ProfileAttribute: "profile", ParentIdentityAttribute: "parentUUID"}},
		},
		Hardware: HardwareReal,
	}
	d.Default()
	want := []DeviceKind{
		{Name: "gpu", DeviceClass: "gpu.example.com", Identity: Identity{Attribute: "uuid"}, Observers: []Observer{ObserverCDI}},
		{Name: "nic", DeviceClass: "nic.example.com", Identity: Identity{Attribute: "mac", Env: &EnvVariable{Name: "NIC_{device}", Value: DefaultEnvValue}},
			Observers: []Observer{ObserverCDI, ObserverEnv}},
		// Two kinds without partitions: the parent is not guessed.
		{Name: "mig", DeviceClass: "mig.example.com", Identity: Identity{Attribute: "uuid"},
			Partitions: &Partitions{ProfileAttribute: "profile", ParentIdentityAttribute: "parentUUID"}, Observers: []Observer{ObserverCDI}},
	}
	if d.APIVersion != APIVersion || d.Kind != Kind {
		t.Errorf("apiVersion %q, kind %q", d.APIVersion, d.Kind)
	}
	if diff := cmp.Diff(want, d.DeviceKinds); diff != "" {
		t.Errorf("defaulted kinds (-want +got):\n%s", diff)
	}
	d.DeviceKinds = append(d.DeviceKinds[:1], d.DeviceKinds[2])
	d.Default()
	if got := d.DeviceKinds[1].Partitions.ParentKind; got != "gpu" {
		t.Errorf("parentKind with one whole kind defaulted to %q, want gpu", got)
	}
	before := deepCopy(t, d)
	d.Default()
	if diff := cmp.Diff(before, d, sameDeclaration); diff != "" {
		t.Errorf("Default is not idempotent:\n%s", diff)
	}
}

// A declaration built in code has no lines; its problems name it as such
// and Validate is repeatable.
func TestValidateInCode(t *testing.T) {
	t.Parallel()
	d := &Declaration{
		Driver:      Driver{Name: "gpu.example.com", Pods: &DriverPods{Selector: "app=x"}},
		DeviceKinds: []DeviceKind{{Name: "gpu", DeviceClass: "gpu.example.com", Identity: Identity{Attribute: "uuid"}}},
		Capabilities: map[CapabilityName]bool{
			CapabilityDeviceHealthMessages: true,
			"gpuDirect":                    true,
		},
	}
	d.Default()
	err := d.Validate()
	want := `driver declaration: invalid driver declaration:
  capabilities[deviceHealthMessages]: Invalid value: true: deviceHealthMessages (KEP-4680) requires the capability deviceHealth (KEP-4680) claimed too
  capabilities[gpuDirect]: Unsupported value: "gpuDirect": supported values: ` + `"deviceHealth", "deviceHealthMessages", "partitionableDevices", "perDeviceNodeSelection", "partitionableDevicesType", "deviceStatus", "bindingConditions", "adminAccess", "deviceTaints", "consumableCapacity", "fractionalCapacityRange", "deviceMetadata", "listTypeAttributes", "nodeAllocatableResources", "optionalNodeOperations", "deviceCompatibilityGroups", "numaNodeAttribute"
  hardware: Required value: "emulated" (drakit's emulator) or "real"`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%v does not match ErrInvalid", err)
	}
	if again := d.Validate(); again == nil || again.Error() != err.Error() {
		t.Errorf("second Validate: %v", again)
	}
	d.Hardware = HardwareEmulated
	d.Capabilities = map[CapabilityName]bool{CapabilityDeviceHealth: true, CapabilityDeviceHealthMessages: true}
	if err := d.Validate(); err != nil {
		t.Errorf("fixed declaration: %v", err)
	}
}

// deepCopy copies a declaration through JSON (its unexported fields stay
// unset).
func deepCopy(t testing.TB, d *Declaration) *Declaration {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	out := &Declaration{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "read driver declaration ") {
		t.Errorf("missing file: %v", err)
	}
}

func TestObserves(t *testing.T) {
	t.Parallel()
	k := DeviceKind{Observers: []Observer{ObserverCDI, ObserverNVML}}
	for o, want := range map[Observer]bool{ObserverCDI: true, ObserverNVML: true, ObserverEnv: false, ObserverDeviceNodes: false} {
		if got := k.Observes(o); got != want {
			t.Errorf("Observes(%s) = %v, want %v", o, got, want)
		}
	}
}
