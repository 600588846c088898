package declaration

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// examplesDir holds the worked examples of docs/examples.
const examplesDir = "../../docs/examples"

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
		if _, err := Load(f); err != nil {
			t.Errorf("example %s: %v", f, err)
		}
	}
	if want := []string{"env-only-driver.yaml", "plain-driver.yaml", "reference-cpu-driver.yaml", "reference-driver-binding-conditions.yaml", "reference-driver-device-nodes.yaml", "reference-driver.yaml", "reference-nic-driver.yaml", "reference-tpu-driver.yaml"}; !slices.Equal(names, want) {
		t.Errorf("examples %v, want %v", names, want)
	}
}

// The reference driver's declaration is the driver as it is: its classes,
// its partitions, the alpha partition capabilities make conformance turns
// on, device health and taints, and the environment variables reference/driver's CDI code sets.
func TestReferenceDriverExample(t *testing.T) {
	t.Parallel()
	d, err := Load(filepath.Join(examplesDir, "reference-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var claimed []CapabilityName
	for _, c := range KnownCapabilities() {
		if d.Claimed(c.Name) {
			claimed = append(claimed, c.Name)
		}
	}
	wantClaimed := []CapabilityName{CapabilityDeviceHealth, CapabilityDeviceHealthMessages, CapabilityPartitionableDevices,
		CapabilityPartitionableDevicesType, CapabilityAdminAccess, CapabilityDeviceTaints, CapabilityDeviceMetadata, CapabilityListTypeAttributes, CapabilityDeviceCompatibilityGroups, CapabilityNUMANodeAttribute}
	if !slices.Equal(claimed, wantClaimed) {
		t.Errorf("claimed %v, want %v", claimed, wantClaimed)
	}
	if len(d.Capabilities) != len(KnownCapabilities()) {
		t.Errorf("the reference declaration lists %d capabilities, want all %d", len(d.Capabilities), len(KnownCapabilities()))
	}
	if len(d.DeviceKinds) != 2 {
		t.Fatalf("%d device kinds, want gpu and mig", len(d.DeviceKinds))
	}
	for _, tc := range []struct {
		kind      int
		device    string
		identity  string
		wantName  string
		wantValue string
	}{
		{0, "gpu-3", "GPU-33333333-1111-2222-3333-444444444444", "DRAKIT_DEVICE_GPU_3", "GPU-33333333-1111-2222-3333-444444444444"},
		{1, "gpu-0-mig-1g10gb-3", "MIG-0a1b", "DRAKIT_DEVICE_GPU_0_MIG_1G10GB_3", "MIG-0a1b"},
	} {
		k := d.DeviceKinds[tc.kind]
		for _, o := range []Observer{ObserverCDI, ObserverEnv, ObserverDeviceNodes, ObserverNVML} {
			if !k.Observes(o) {
				t.Errorf("kind %s is not observed by %s", k.Name, o)
			}
		}
		v := DeviceValues{Name: tc.device, Identity: tc.identity}
		name, err := k.Identity.Env.ExpandName(v)
		if err != nil || name != tc.wantName {
			t.Errorf("kind %s: variable name %q, %v; want %q", k.Name, name, err, tc.wantName)
		}
		value, err := k.Identity.Env.ExpandValue(v)
		if err != nil || value != tc.wantValue {
			t.Errorf("kind %s: variable value %q, %v; want %q", k.Name, value, err, tc.wantValue)
		}
	}
	if d.Hardware != HardwareEmulated {
		t.Errorf("hardware %q, want emulated", d.Hardware)
	}
}

// The reference driver deployed with --binding-conditions is the reference
// driver with the capability bindingConditions claimed and the condition
// types reference/driver publishes, left to the kit's attach controller;
// reference-driver.yaml, the default deployment's, claims none.
func TestReferenceDriverBindingConditionsExample(t *testing.T) {
	t.Parallel()
	plain, err := Load(filepath.Join(examplesDir, "reference-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(filepath.Join(examplesDir, "reference-driver-binding-conditions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Claimed(CapabilityBindingConditions) || plain.BindingConditions != nil {
		t.Errorf("reference-driver.yaml claims binding conditions: %+v", plain.BindingConditions)
	}
	want := &BindingConditions{Conditions: []string{"gpu.drakit.dev/attached"}, FailureConditions: []string{"gpu.drakit.dev/attach-failed"}, SetBy: SetByKit}
	if diff := cmp.Diff(want, d.BindingConditions); diff != "" {
		t.Errorf("bindingConditions (-want +got):\n%s", diff)
	}
	if d.Scenarios == nil || d.Scenarios.Tags != "@kep-5007" {
		t.Errorf("scenarios %+v, want KEP-5007's alone", d.Scenarios)
	}
	// Everything else as reference-driver.yaml.
	d.BindingConditions, d.Scenarios = nil, plain.Scenarios
	d.Capabilities[CapabilityBindingConditions] = false
	if diff := cmp.Diff(plain, d, sameDeclaration); diff != "" {
		t.Errorf("beyond binding conditions the declarations differ (-reference-driver.yaml +binding):\n%s", diff)
	}
}

// The env-only driver's containers show GPU_DEVICE_<index>=<device name>.
func TestEnvOnlyDriverExample(t *testing.T) {
	t.Parallel()
	d, err := Load(filepath.Join(examplesDir, "env-only-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := d.DeviceKinds[0]
	if !slices.Equal(k.Observers, []Observer{ObserverCDI, ObserverEnv}) {
		t.Errorf("observers %v, want cdi and env only", k.Observers)
	}
	v := DeviceValues{Name: "gpu-0", Identity: "gpu-18db0e85-99e9-c746-8531-ffeb86328b39", Attribute: func(name string) (string, bool) {
		return "0", name == "index"
	}}
	name, err := k.Identity.Env.ExpandName(v)
	if err != nil || name != "GPU_DEVICE_0" {
		t.Errorf("variable name %q, %v; want GPU_DEVICE_0", name, err)
	}
	value, err := k.Identity.Env.ExpandValue(v)
	if err != nil || value != "gpu-0" {
		t.Errorf("variable value %q, %v; want gpu-0", value, err)
	}
	// An upstream-style driver keeps no exclusive ownership of a device
	// at prepare, so it honours admin access; it claims nothing else.
	for _, c := range KnownCapabilities() {
		if want := c.Name == CapabilityAdminAccess; d.Claimed(c.Name) != want {
			t.Errorf("%s claimed: %v, want %v", c, d.Claimed(c.Name), want)
		}
	}
}

// The plain driver's declaration says what reference/plaindriver injects
// per device: PLAIN_DEVICE_<index>=<device> and a read-only mount of
// /var/run/plain/<device>, no device node.
func TestPlainDriverExample(t *testing.T) {
	t.Parallel()
	d, err := Load(filepath.Join(examplesDir, "plain-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := d.DeviceKinds[0]
	if !slices.Equal(k.Observers, []Observer{ObserverCDI, ObserverEnv, ObserverMounts}) || len(k.DeviceNodes) != 0 {
		t.Errorf("observers %v, device nodes %v; want cdi, env and mounts, no device node", k.Observers, k.DeviceNodes)
	}
	if len(k.Mounts) != 1 || !k.Mounts[0].ReadOnly {
		t.Fatalf("mounts %+v, want one read-only mount", k.Mounts)
	}
	if got, err := k.Mounts[0].ExpandPath(DeviceValues{Name: "dev-1"}); err != nil || got != "/var/run/plain/dev-1" {
		t.Errorf("mount of dev-1 %q, %v; want /var/run/plain/dev-1", got, err)
	}
}

// The reference NIC driver's declaration: VFs are its whole devices, PF
// bandwidth shares its shared kind, the GPUs their PCIe root peers.
func TestReferenceNICDriverExample(t *testing.T) {
	t.Parallel()
	d, err := Load(filepath.Join(examplesDir, "reference-nic-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := d.KitSettings()
	if s.DeviceClassName != "vf.nic.drakit.dev" || s.SharedDeviceClassName != "nic.drakit.dev" || s.SharedCapacity != "bandwidth" ||
		s.SharedIdentityAttribute != "resource.kubernetes.io/pciBusID" || !slices.Equal(s.PCIeRootPeerClasses, []string{"gpu.drakit.dev"}) {
		t.Errorf("settings %+v", s)
	}
	for _, c := range []CapabilityName{CapabilityConsumableCapacity, CapabilityDeviceStatus, CapabilityNUMANodeAttribute} {
		if !d.Claimed(c) {
			t.Errorf("%s not claimed", c)
		}
	}
	name, err := d.DeviceKinds[0].Identity.Env.ExpandName(DeviceValues{Name: "nic-0000-0c-00-0-vf1", Identity: "0000:0c:00.2"})
	if err != nil || name != "DRAKIT_DEVICE_NIC_0000_0C_00_0_VF1_PCI_ADDRESS" {
		t.Errorf("variable name %q, %v", name, err)
	}
}
