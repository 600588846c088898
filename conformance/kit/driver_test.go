package kit

import (
	"slices"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/declaration"
)

// TestDriverSettingsOfADeclaration reads the env-only example driver's
// declaration: no partitions, no NVML, no per-device prefix.
func TestDriverSettingsOfADeclaration(t *testing.T) {
	d, err := declaration.Load("../../docs/examples/env-only-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := driverSettings(d)
	if cfg.DriverName != "gpu.example.com" || cfg.PartitionClassName != "" || cfg.DeviceEnvPrefix != "" || !cfg.Hardware {
		t.Errorf("declared settings not read: %+v", cfg)
	}
	if cfg.observes(declaration.ObserverNVML) || !cfg.observes(declaration.ObserverCDI) {
		t.Errorf("observers %v, want cdi and env without nvml", cfg.Observers)
	}
	if env := cfg.deviceEnv(); env == nil || env.Name != "GPU_DEVICE_{attribute:index}" || env.Value != "{device}" {
		t.Errorf("per-device variable %+v, want the declared patterns", env)
	}
	if cfg.ProfileAttribute != "" || !slices.Equal(cfg.Capabilities, []string{"adminAccess"}) {
		t.Errorf("ProfileAttribute %q, capabilities %v: a declaration without partitions leaves the first empty, and this one claims adminAccess alone", cfg.ProfileAttribute, cfg.Capabilities)
	}
	if k := cfg.deviceKinds(); len(k) != 1 || k[0].Name != "gpu" || k[0].DeviceClass != "gpu.example.com" {
		t.Errorf("device kinds %+v, want the declared kind gpu of DeviceClass gpu.example.com", k)
	}
	if (DriverSettings{}).DeviceClass() != "" || driverSettings(nil).DriverName != "" {
		t.Error("no declaration: settings not empty")
	}
}

// TestReferenceDriverSettings: everything the kit knows about the
// reference driver comes from its declaration.
func TestReferenceDriverSettings(t *testing.T) {
	cfg := driverSettings(referenceDriverConfig().Declaration)
	type settings struct {
		driver, class, uuid, envPrefix, partitions, profile, parent, memory, Ns, selector string
	}
	want := settings{"gpu.drakit.dev", "gpu.drakit.dev", "uuid", "DRAKIT_DEVICE_", "mig.gpu.drakit.dev", "profile", "parentUUID", "memory",
		"drakit-system", "app.kubernetes.io/name=drakit-driver"}
	got := settings{cfg.DriverName, cfg.DeviceClassName, cfg.UUIDAttribute, cfg.DeviceEnvPrefix, cfg.PartitionClassName, cfg.ProfileAttribute,
		cfg.ParentUUIDAttribute, cfg.MemoryCapacity, cfg.DriverNamespace, cfg.DriverPodSelector}
	if got != want {
		t.Errorf("settings:\n got %+v\nwant %+v", got, want)
	}
	if w := []string{"deviceHealth", "deviceHealthMessages", "partitionableDevices", "partitionableDevicesType", "adminAccess", "deviceTaints", "deviceMetadata", "listTypeAttributes", "deviceCompatibilityGroups", "numaNodeAttribute"}; !slices.Equal(cfg.Capabilities, w) {
		t.Errorf("capabilities %v, want %v", cfg.Capabilities, w)
	}
	if cfg.NUMANodesAttribute != "closeNUMANodes" {
		t.Errorf("NUMA nodes attribute %q, want closeNUMANodes", cfg.NUMANodesAttribute)
	}
	if !cfg.observes(declaration.ObserverNVML) || cfg.Hardware {
		t.Errorf("observers %v hardware %t, want nvml on emulated hardware", cfg.Observers, cfg.Hardware)
	}
}

// TestRunTagsDefaultToTheDeclarations: a run without a tag filter runs the
// declaration's scenarios.tags; a run's own filter replaces them.
func TestRunTagsDefaultToTheDeclarations(t *testing.T) {
	cfg := referenceDriverConfig()
	cfg.Declaration.Scenarios = &declaration.Scenarios{Tags: "@kep-4381"}
	s := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration)}
	if got := s.tags(); got != "@kep-4381" {
		t.Errorf("no --tags: %q, want the declaration's @kep-4381", got)
	}
	s.Cfg.Tags = "@kep-4815"
	if got := s.tags(); got != "@kep-4815" {
		t.Errorf("--tags @kep-4815: %q, want it", got)
	}
	s.Cfg.Tags, s.Driver.Tags = "", ""
	if got := s.tags(); got != "" {
		t.Errorf("neither: %q, want every scenario", got)
	}
}

func TestMultiNodeClasses(t *testing.T) {
	t.Parallel()
	var c DriverSettings
	c.DriverName, c.DeviceClassName = "tpu.drakit.dev", "tpu.drakit.dev"
	if got := c.MultiNodeClasses(); strings.Join(got, ",") != "tpu.drakit.dev" {
		t.Errorf("no torus: %v", got)
	}
	c.TorusSubsliceClassName = "subslice.tpu.drakit.dev"
	if got := c.MultiNodeClasses(); strings.Join(got, ",") != "tpu.drakit.dev,subslice.tpu.drakit.dev" {
		t.Errorf("torus: %v", got)
	}
}

// Tests change the driver under test where the kit reads it: in cfg's
// declaration, before a Suite derives its settings.

// wholeKind is the declaration's first kind of whole devices.
func wholeKind(cfg Config) *declaration.DeviceKind {
	for i := range cfg.Declaration.DeviceKinds {
		if k := &cfg.Declaration.DeviceKinds[i]; k.Partitions == nil && k.SharedCapacity == "" {
			return k
		}
	}
	panic("the declaration has no kind of whole devices")
}

// dropPartitions removes the declaration's kinds of partitions, and its
// claim of partitionableDevices with them.
func dropPartitions(cfg Config) {
	d := cfg.Declaration
	d.DeviceKinds = slices.DeleteFunc(d.DeviceKinds, func(k declaration.DeviceKind) bool { return k.Partitions != nil })
	delete(d.Capabilities, declaration.CapabilityPartitionableDevices)
}

// noDriverPods leaves the kit without the driver's pods: no logs, no
// restarts.
func noDriverPods(cfg Config) { cfg.Declaration.Driver.Pods = nil }

// claimOnly makes the driver claim exactly the capabilities given.
func claimOnly(cfg Config, names ...declaration.CapabilityName) {
	cfg.Declaration.Capabilities = map[declaration.CapabilityName]bool{}
	for _, n := range names {
		cfg.Declaration.Capabilities[n] = true
	}
}
