package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/platform"
)

func ptr[T any](v T) *T { return &v }

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// errorKeys renders validation errors as "<path>: <type>" for comparison.
func errorKeys(t *testing.T, err error) []string {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *ValidationError, got %v", err)
	}
	var keys []string
	for _, e := range verr.Errs {
		keys = append(keys, e.Field+": "+string(e.Type))
	}
	return keys
}

func TestInvalidProfiles(t *testing.T) {
	t.Parallel()
	// Every testdata/invalid-*.yaml must appear here. want lists the exact
	// field errors; wantErr is for errors without a field path.
	tests := map[string]struct {
		want    []string
		wantErr string
	}{
		"api-version":             {want: []string{"apiVersion: FieldValueNotSupported"}},
		"kind":                    {want: []string{"kind: FieldValueNotSupported"}},
		"duplicate-key":           {wantErr: `line 6: key "name" already set`},
		"syntax":                  {wantErr: "line 3"},
		"second-document":         {wantErr: "line 17: a second YAML document"},
		"second-document-garbage": {wantErr: "line 17: a second YAML document"},
		"unknown-field":           {want: []string{"spec.gpus[0].minr: FieldValueForbidden"}},
		"case-field":              {want: []string{"spec.gpus[0].Minor: FieldValueForbidden"}},
		"wrong-type":              {want: []string{"spec.gpus[0].minor: FieldValueTypeInvalid"}},
		"unquoted-cc":             {want: []string{"spec.gpus[0].computeCapability: FieldValueTypeInvalid"}},
		"bad-hex":                 {want: []string{"spec.gpus[0].deviceID: FieldValueInvalid"}},
		"duplicate-minor":         {want: []string{"spec.gpus[1].minor: FieldValueDuplicate"}},
		"duplicate-bus":           {want: []string{"spec.gpus[1].pcie.bus: FieldValueDuplicate"}},
		"duplicate-uuid":          {want: []string{"spec.gpus[1].uuid: FieldValueDuplicate"}},
		"unknown-model":           {want: []string{"spec.gpus[0].model: FieldValueNotSupported"}},
		"zero-memory":             {want: []string{"spec.gpus[0].memory: FieldValueInvalid"}},
		"fractional-memory":       {want: []string{"spec.gpus[0].memory: FieldValueInvalid"}},
		"reserved-memory":         {want: []string{"spec.gpus[0].memoryReserved: FieldValueInvalid"}},
		"bar1":                    {want: []string{"spec.gpus[0].bar1Size: FieldValueInvalid"}},
		"minor-range":             {want: []string{"spec.gpus[0].minor: FieldValueInvalid"}},
		"missing-minor":           {want: []string{"spec.gpus[0].minor: FieldValueRequired"}},
		"bus-range":               {want: []string{"spec.gpus[0].pcie.bus: FieldValueInvalid"}},
		"missing-root-complex":    {want: []string{"spec.gpus[0].pcie.rootComplex: FieldValueNotFound"}},
		"missing-switch":          {want: []string{"spec.gpus[0].pcie.switch: FieldValueNotFound"}},
		"bad-uuid":                {want: []string{"spec.gpus[0].uuid: FieldValueInvalid"}},
		"internal-bus":            {want: []string{"spec.gpus[0].pcie.bus: FieldValueDuplicate"}},
		"below-switch":            {want: []string{"spec.gpus[0].pcie.bus: FieldValueInvalid"}},
		"switch-overlap":          {want: []string{"spec.gpus[0].pcie.bus: FieldValueInvalid"}},
		"inside-switch-range":     {want: []string{"spec.gpus[1].pcie.bus: FieldValueInvalid"}},
		"long-name":               {want: []string{"spec.gpus[0].name: FieldValueTooLong"}},
		"bad-enums": {want: []string{
			"spec.gpus[0].architecture: FieldValueNotSupported",
			"spec.gpus[0].brand: FieldValueNotSupported",
		}},
		"no-model-fields": {want: []string{
			"spec.gpus[0].vendorID: FieldValueRequired",
			"spec.gpus[0].deviceID: FieldValueRequired",
			"spec.gpus[0].subsystemVendorID: FieldValueRequired",
			"spec.gpus[0].subsystemDeviceID: FieldValueRequired",
			"spec.gpus[0].memory: FieldValueRequired",
			"spec.gpus[0].bar1Size: FieldValueRequired",
			"spec.gpus[0].architecture: FieldValueRequired",
			"spec.gpus[0].brand: FieldValueRequired",
			"spec.gpus[0].computeCapability: FieldValueRequired",
			"spec.gpus[0].vbiosVersion: FieldValueRequired",
		}},
		"mig-capable": {want: []string{
			"spec.gpus[0].mig: FieldValueForbidden",
			"spec.gpus[1].mig: FieldValueForbidden",
			"spec.gpus[2].mig.layout: FieldValueNotSupported",
			"spec.gpus[3].mig.mode: FieldValueInvalid",
			"spec.gpus[4].mig.mode: FieldValueNotSupported",
			"spec.gpus[4].mig.instances: FieldValueForbidden",
			"spec.gpus[5].mig.layout: FieldValueInvalid",
		}},
		"mig-instances": {want: []string{
			"spec.gpus[0].mig.instances[0].profile: FieldValueNotSupported",
			"spec.gpus[0].mig.instances[1].placement: FieldValueNotSupported",
			"spec.gpus[0].mig.instances[3].placement: FieldValueInvalid",
			"spec.gpus[0].mig.instances[5].profile: FieldValueInvalid",
			"spec.gpus[0].mig.instances[6].placement: FieldValueRequired",
			"spec.gpus[0].mig.instances[7].computeInstances[1].placement: FieldValueInvalid",
			"spec.gpus[0].mig.instances[7].computeInstances[2].profile: FieldValueNotSupported",
			"spec.gpus[0].mig.instances: FieldValueTooMany",
		}},
		"mig-too-many": {want: []string{
			"spec.gpus[0].mig.instances[7].profile: FieldValueInvalid",
			"spec.gpus[0].mig.instances[7].placement: FieldValueInvalid",
			"spec.gpus[0].mig.instances: FieldValueTooMany",
			"spec.gpus[1].mig.instances[0].computeInstances[7].placement: FieldValueInvalid",
			"spec.gpus[1].mig.instances: FieldValueTooMany",
		}},
		"driver": {want: []string{
			"spec.driver.driverVersion: FieldValueInvalid",
			"spec.driver.cudaDriverVersion: FieldValueInvalid",
		}},
		"numa": {want: []string{
			"spec.numaNodes[0].distances[0]: FieldValueInvalid",
			"spec.numaNodes[1].cpulist: FieldValueInvalid",
			"spec.numaNodes[2].id: FieldValueDuplicate",
			"spec.numaNodes[2].cpulist: FieldValueInvalid",
			"spec.rootComplexes[0].numaNode: FieldValueNotFound",
		}},
		"nic-fields": {want: []string{
			"spec.nics[0].model: FieldValueNotSupported",
			"spec.nics[1].vendorID: FieldValueRequired",
			"spec.nics[1].deviceID: FieldValueRequired",
			"spec.nics[1].subsystemVendorID: FieldValueRequired",
			"spec.nics[1].subsystemDeviceID: FieldValueRequired",
			"spec.nics[1].driver: FieldValueRequired",
			"spec.nics[1].speedMbps: FieldValueRequired",
			"spec.nics[2].driver: FieldValueNotSupported",
			"spec.nics[3].rdma: FieldValueInvalid",
			"spec.nics[4].mtu: FieldValueInvalid",
			"spec.nics[4].link: FieldValueNotSupported",
		}},
		"nic-names": {want: []string{
			"spec.nics[1].interface: FieldValueDuplicate",
			"spec.nics[2].interface: FieldValueInvalid",
			"spec.nics[2].mac: FieldValueInvalid",
			"spec.nics[3].mac: FieldValueInvalid",
			"spec.nics[4].mac: FieldValueDuplicate",
		}},
		"nic-sriov": {want: []string{
			"spec.nics[0].totalVFs: FieldValueInvalid",
			"spec.nics[1].vfDeviceID: FieldValueRequired",
			"spec.nics[1].vfOffset: FieldValueRequired",
			"spec.nics[1].vfStride: FieldValueRequired",
			"spec.nics[2].totalVFs: FieldValueInvalid",
			"spec.nics[3].vfStride: FieldValueInvalid",
		}},
		"nic-bus": {want: []string{
			"spec.nics[0].pcie.bus: FieldValueDuplicate",
			"spec.nics[1].pcie.bus: FieldValueDuplicate",
			"spec.nics[2].pcie.switch: FieldValueNotFound",
			"spec.nics[4].pcie.bus: FieldValueInvalid",
		}},
		"tpu-fields": {want: []string{
			"spec.tpu.generation: FieldValueNotSupported",
			"spec.tpu.chipBounds: FieldValueInvalid",
			"spec.tpu.slice.name: FieldValueRequired",
		}},
		"tpu-slice": {want: []string{
			"spec.tpu.chips: FieldValueInvalid",
			"spec.tpu.chips[1].pcie.rootComplex: FieldValueNotFound",
			"spec.tpu.slice.workerID: FieldValueInvalid",
		}},
		"tpu-topology": {want: []string{
			"spec.tpu.slice.topology: FieldValueInvalid",
		}},
		"nvlink-fields": {want: []string{
			"spec.nvlink.version: FieldValueInvalid",
			"spec.nvlink.linksPerGPU: FieldValueInvalid",
			"spec.nvlink.nvswitches: FieldValueInvalid",
			"spec.nvlink.imexChannels: FieldValueInvalid",
			"spec.nvlink.domain.clusterUUID: FieldValueInvalid",
			"spec.nvlink.domain.state: FieldValueNotSupported",
		}},
		"nvlink-no-gpus": {want: []string{
			"spec.nvlink: FieldValueForbidden",
			"spec.nvlink.domain.clusterUUID: FieldValueRequired",
		}},
		"nvlink-direct": {want: []string{"spec.nvlink.linksPerGPU: FieldValueInvalid"}},
		"root-complexes": {want: []string{
			"spec.rootComplexes[0].switches[0].bus: FieldValueInvalid",
			"spec.rootComplexes[0].switches[1].bus: FieldValueRequired",
			"spec.rootComplexes[1].name: FieldValueDuplicate",
			"spec.rootComplexes[2].bus: FieldValueDuplicate",
			"spec.rootComplexes[3].name: FieldValueInvalid",
			"spec.rootComplexes[3].domain: FieldValueInvalid",
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
			_, err := LoadFile(filepath.Join("testdata", "invalid-"+name+".yaml"))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if tc.wantErr != "" {
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if diff := cmp.Diff(tc.want, errorKeys(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error: %v", diff, err)
			}
			if !strings.Contains(err.Error(), "invalid-"+name+".yaml") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestValidProfiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid profiles: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			p, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// The resolved profile survives a round trip through YAML
			// unchanged, so `drakit emulator show` output loads again.
			out, err := yaml.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("parse shown profile: %v\n%s", err, out)
			}
			again.Default()
			if errs := again.Validate(); len(errs) > 0 {
				t.Fatalf("shown profile is invalid: %v", errs)
			}
			if diff := cmp.Diff(p, again, quantityEqual); diff != "" {
				t.Errorf("round trip changed the profile (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata:   Metadata{Name: "minimal"},
		Spec: Spec{
			UUIDSeed: "minimal",
			Driver:   Driver{DriverVersion: "570.172.08", CUDADriverVersion: 12080},
			NUMANodes: []platform.NUMANode{
				{ID: ptr(0), CPUList: "0-7", Distances: []int{10}, Socket: ptr(0)},
			},
			RootComplexes: []platform.RootComplex{{Name: "rc0", NUMANode: ptr(0)}},
			GPUs: []gpu.GPU{{
				Model:             "H100-80GB-HBM3",
				Name:              "NVIDIA H100 80GB HBM3",
				VendorID:          0x10de,
				DeviceID:          0x2330,
				SubsystemVendorID: 0x10de,
				SubsystemDeviceID: 0x16c1,
				Memory:            resource.NewQuantity(85520809984, resource.BinarySI),
				MemoryReserved:    resource.NewQuantity(579<<20, resource.BinarySI),
				BAR1Size:          resource.NewQuantity(128<<30, resource.BinarySI),
				Architecture:      "Hopper",
				Brand:             "NVIDIA",
				ComputeCapability: "9.0",
				MIGCapable:        ptr(true),
				VBIOSVersion:      "96.00.99.00.01",
				Minor:             ptr(0),
				UUID:              gpu.DeriveUUID("minimal", platform.Address{Bus: 1}),
				PCIe:              platform.Placement{RootComplex: "rc0", Bus: 1},
			}},
		},
	}
	if diff := cmp.Diff(want, p, quantityEqual); diff != "" {
		t.Errorf("defaulted profile (-want +got):\n%s", diff)
	}
	// Default is idempotent.
	again := *p
	again.Default()
	if diff := cmp.Diff(p, &again, quantityEqual); diff != "" {
		t.Errorf("second Default changed the profile:\n%s", diff)
	}
}

func TestNICDefaults(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-nics.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []nic.NIC{
		{
			Model: "ConnectX-7", VendorID: 0x15b3, DeviceID: 0x1021, SubsystemVendorID: 0x15b3, SubsystemDeviceID: 0x0021,
			Driver: "mlx5_core", RDMA: ptr(true), SpeedMbps: 400000, TotalVFs: ptr(16), VFDeviceID: 0x101e,
			VFOffset: ptr(1), VFStride: ptr(1), Interface: "enp19s0np0", MAC: nic.DeriveMAC("nics", platform.Address{Bus: 0x13}),
			MTU: 1500, Link: "up", PCIe: platform.Placement{RootComplex: "rc0", Switch: "sw0", Bus: 0x13},
		},
		{
			Model: "E810-C", VendorID: 0x8086, DeviceID: 0x1592, SubsystemVendorID: 0x8086, SubsystemDeviceID: 0x0002,
			Driver: "ice", RDMA: ptr(false), SpeedMbps: 100000, TotalVFs: ptr(128), VFDeviceID: 0x1889,
			VFOffset: ptr(8), VFStride: ptr(1), Interface: "eth1", MAC: "0c:42:a1:00:00:01",
			MTU: 9000, Link: "down", PCIe: platform.Placement{RootComplex: "rc0", Bus: 0x20},
		},
		{
			VendorID: 0x15b3, DeviceID: 0x1021, SubsystemVendorID: 0x15b3, SubsystemDeviceID: 0x0021,
			Driver: "mlx5_core", RDMA: ptr(false), SpeedMbps: 25000, TotalVFs: ptr(0),
			Interface: "enP1p5s0np0", MAC: nic.DeriveMAC("nics", platform.Address{Domain: 1, Bus: 5}),
			MTU: 1500, Link: "up", PCIe: platform.Placement{RootComplex: "rc1", Bus: 0x05},
		},
	}
	if diff := cmp.Diff(want, p.Spec.NICs); diff != "" {
		t.Errorf("defaulted NICs (-want +got):\n%s", diff)
	}
}

func TestExplicitFieldsOverrideModel(t *testing.T) {
	t.Parallel()
	p, err := LoadFile("testdata/valid-explicit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a100 := p.Spec.GPUs[1]
	if a100.Name != "NVIDIA A100-SXM4-80GB" || *a100.MIGCapable || a100.Memory.Value() != 40<<30 {
		t.Errorf("A100 with overrides: name %q, migCapable %v, memory %s", a100.Name, *a100.MIGCapable, a100.Memory)
	}
	if p.Spec.RootComplexes[0].Domain != 1 || p.Spec.GPUs[0].SubsystemVendorID != 0x10de || p.Spec.GPUs[0].SubsystemDeviceID != 1 {
		t.Errorf("hex spellings: domain %s, subsystem %s:%s", p.Spec.RootComplexes[0].Domain,
			p.Spec.GPUs[0].SubsystemVendorID, p.Spec.GPUs[0].SubsystemDeviceID)
	}
}

func TestDerivedUUIDs(t *testing.T) {
	t.Parallel()
	a, err := Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range a.Spec.GPUs {
		if a.Spec.GPUs[i].UUID != b.Spec.GPUs[i].UUID {
			t.Errorf("gpu %d: UUID not reproducible: %s vs %s", i, a.Spec.GPUs[i].UUID, b.Spec.GPUs[i].UUID)
		}
		if seen[a.Spec.GPUs[i].UUID] {
			t.Errorf("gpu %d: UUID %s repeated", i, a.Spec.GPUs[i].UUID)
		}
		seen[a.Spec.GPUs[i].UUID] = true
	}
}

// TestLoadSeeded checks that a UUID seed (one per node) gives the same
// profile other GPU UUIDs and NIC MACs, reproducibly, and keeps UUIDs a
// profile spells out.
func TestLoadSeeded(t *testing.T) {
	t.Parallel()
	plain, err := Load("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	same, err := LoadSeeded("dgx-h100", "")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(plain, same) {
		t.Error("LoadSeeded with an empty seed differs from Load")
	}
	node2, err := LoadSeeded("dgx-h100", "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := LoadSeeded("dgx-h100", "127.0.0.2")
	node3, _ := LoadSeeded("dgx-h100", "127.0.0.3")
	if node2.Spec.UUIDSeed != "127.0.0.2" {
		t.Errorf("uuidSeed %q, want 127.0.0.2", node2.Spec.UUIDSeed)
	}
	for i := range plain.Spec.GPUs {
		u1, u2, u3 := plain.Spec.GPUs[i].UUID, node2.Spec.GPUs[i].UUID, node3.Spec.GPUs[i].UUID
		if u1 == u2 || u2 == u3 || u1 == u3 {
			t.Errorf("gpu %d: UUIDs %s %s %s, want three different", i, u1, u2, u3)
		}
		if again.Spec.GPUs[i].UUID != u2 {
			t.Errorf("gpu %d: seeded UUID not reproducible: %s vs %s", i, u2, again.Spec.GPUs[i].UUID)
		}
	}
	file := filepath.Join(t.TempDir(), "explicit.yaml")
	data, err := yaml.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	explicit, err := LoadSeeded(file, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if explicit.Spec.GPUs[0].UUID != plain.Spec.GPUs[0].UUID {
		t.Errorf("a spelled-out UUID changed with the seed: %s, want %s", explicit.Spec.GPUs[0].UUID, plain.Spec.GPUs[0].UUID)
	}
}

func TestBuiltin(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"dgx-a100-mig", "dgx-h100", "gb200-nvl-node", "gb200-tpu-v5p-node", "hgx-h100", "mixed-mig", "tpu-v5p-host"}, BuiltinNames()); diff != "" {
		t.Errorf("BuiltinNames (-want +got):\n%s", diff)
	}
	if _, err := Builtin("dgx-a100"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown built-in: want ErrNotFound, got %v", err)
	}
	p, err := Builtin("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.GPUs) != 8 || len(p.Spec.NUMANodes) != 2 || len(p.Spec.RootComplexes) != 2 {
		t.Errorf("dgx-h100: %d GPUs, %d NUMA nodes, %d root complexes", len(p.Spec.GPUs), len(p.Spec.NUMANodes), len(p.Spec.RootComplexes))
	}
	// Builtin returns a fresh copy.
	p.Spec.GPUs = nil
	if q, _ := Builtin("dgx-h100"); len(q.Spec.GPUs) != 8 {
		t.Error("changing a returned built-in changed the next one")
	}
}

func TestLoadNameOrPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "dgx-h100.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg      string
		wantName string
		wantErr  error
	}{
		{arg: "dgx-h100", wantName: "dgx-h100"},
		{arg: file, wantName: "minimal"},
		{arg: "nope", wantErr: ErrNotFound},
		{arg: filepath.Join(dir, "missing.yaml"), wantErr: os.ErrNotExist},
	}
	for _, tc := range tests {
		p, err := Load(tc.arg)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Load(%q): want %v, got %v", tc.arg, tc.wantErr, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Load(%q): %v", tc.arg, err)
			continue
		}
		if p.Metadata.Name != tc.wantName {
			t.Errorf("Load(%q) loaded %q, want %q", tc.arg, p.Metadata.Name, tc.wantName)
		}
	}
}

// TestRead: Read parses without defaulting, built-in or file, and names
// its source.
func TestRead(t *testing.T) {
	t.Parallel()
	p, source, err := Read("tpu-v5p-host")
	if err != nil {
		t.Fatal(err)
	}
	if source != "built-in profile tpu-v5p-host" || p.Spec.UUIDSeed != "" || p.Spec.Driver.DriverVersion != "" {
		t.Errorf("Read(tpu-v5p-host): source %q, uuidSeed %q, driver %q: want it undefaulted", source, p.Spec.UUIDSeed, p.Spec.Driver.DriverVersion)
	}
	if p, source, err = Read("testdata/valid-minimal.yaml"); err != nil || source != "file testdata/valid-minimal.yaml" || p.Spec.GPUs[0].UUID != "" {
		t.Errorf("Read(file): %v, source %q", err, source)
	}
	if _, _, err := Read("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read(nope): %v, want ErrNotFound", err)
	}
	var verr *ValidationError
	if _, _, err := Read("testdata/invalid-unknown-field.yaml"); !errors.As(err, &verr) || verr.Source != "file testdata/invalid-unknown-field.yaml" {
		t.Errorf("Read(invalid file): %v, want a ValidationError naming the file", err)
	}
}
