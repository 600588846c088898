package declaration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestKitSettings(t *testing.T) {
	t.Parallel()
	tests := map[string]Settings{
		// The reference driver, as make conformance certifies it.
		"../../docs/examples/reference-driver.yaml": {
			DriverName: "gpu.drakit.dev",
			Capabilities: []string{"deviceHealth", "deviceHealthMessages", "partitionableDevices", "partitionableDevicesType",
				"adminAccess", "deviceTaints", "deviceMetadata", "listTypeAttributes", "deviceCompatibilityGroups", "numaNodeAttribute"},
			DeviceClassName:      "gpu.drakit.dev",
			UUIDAttribute:        "uuid",
			PartitionClassName:   "mig.gpu.drakit.dev",
			ProfileAttribute:     "profile",
			ParentUUIDAttribute:  "parentUUID",
			MemoryCapacity:       "memory",
			DeviceEnvPrefix:      "DRAKIT_DEVICE_",
			DriverNamespace:      "drakit-system",
			DriverPodSelector:    "app.kubernetes.io/name=drakit-driver",
			Observers:            []string{"cdi", "env", "deviceNodes", "nvml"},
			DeviceNodes:          []DeviceNode{{Path: "/dev/nvidia{attribute:minor}", Type: "c", Major: "195", Minor: "{attribute:minor}"}},
			PCIVendor:            "10de",
			PCIClass:             "0302",
			PCIeRootPeerClasses:  []string{"vf.nic.drakit.dev"},
			FaultResponses:       []string{"13=Healthy", "48=Unhealthy/NoExecute", "94=Unhealthy/NoSchedule"},
			FaultCommand:         &emulatorFaultCommand,
			CliqueAttribute:      "nvlinkClique",
			IMEXChannelClassName: "imex.gpu.drakit.dev",
			NUMANodesAttribute:   "closeNUMANodes",
			Tags:                 "~@interpose && ~@kep-5075 && ~@kep-4817 && ~@kep-5517 && ~@kep-5007 && ~@multi-node && ~@nvlink-fabric && ~@tpu-torus",
		},
		// GPU_DEVICE_{attribute:index}={device} is beyond a prefix: the
		// patterns themselves.
		"../../docs/examples/env-only-driver.yaml": {
			DriverName:        "gpu.example.com",
			Capabilities:      []string{"adminAccess"},
			DeviceClassName:   "gpu.example.com",
			UUIDAttribute:     "uuid",
			MemoryCapacity:    "memory",
			DriverNamespace:   "dra-example-driver",
			DriverPodSelector: "app.kubernetes.io/name=dra-example-driver",
			Hardware:          true,
			Observers:         []string{"cdi", "env"},
			DeviceEnvName:     "GPU_DEVICE_{attribute:index}",
			DeviceEnvValue:    "{device}",
		},
		// The value is not {identity}: no prefix. Memory of the partitions.
		"testdata/valid-full.yaml": {
			DriverName:    "gpu.example.com",
			DriverVersion: "v1.2.3-rc.1+build.5",
			Capabilities: []string{"deviceHealth", "deviceHealthMessages", "partitionableDevices", "partitionableDevicesType",
				"deviceStatus", "bindingConditions", "adminAccess", "deviceTaints", "deviceMetadata",
				"listTypeAttributes", "deviceCompatibilityGroups", "numaNodeAttribute"},
			DeviceClassName:     "gpu.example.com",
			UUIDAttribute:       "gpu.example.com/uuid",
			PartitionClassName:  "mig.gpu.example.com",
			ProfileAttribute:    "profile",
			ParentUUIDAttribute: "parentUUID",
			MemoryCapacity:      "memory",
			DriverNamespace:     "example-system",
			DriverPodSelector:   "app.kubernetes.io/name=example-driver,app.kubernetes.io/component in (kubelet-plugin)",
			Hardware:            true,
			Observers:           []string{"cdi", "env", "deviceNodes", "mounts", "nvml"},
			DeviceNodes: []DeviceNode{{Path: "/dev/example{attribute:index}", Type: "c", Major: "240", Minor: "{attribute:index}"},
				{Path: "/dev/example-caps/{device}"}},
			Mounts:         []Mount{{Path: "/run/example/{identity}", ReadOnly: true}},
			FaultResponses: []string{"48=Unhealthy/NoExecute", "link:down/2=Unhealthy/NoSchedule", "13=Healthy"},
			FaultCommand: &FaultCommand{
				Inject: []string{"/opt/example/bin/gpuctl", "inject", "--node={node}", "--gpu={identity}", "--index={attribute:index}", "{fault}"},
				Reset:  []string{"gpuctl", "reset", "{device}"},
			},
			DeviceEnvName:            "EXAMPLE_GPU_{device}",
			DeviceEnvValue:           "uuid={identity};index={attribute:index}",
			BindingConditions:        []string{"gpu.example.com/attached", "ready"},
			BindingFailureConditions: []string{"gpu.example.com/attach-failed"},
			BindingConditionsSetBy:   "driver",
			NUMANodesAttribute:       "gpu.example.com/closeNUMANodes",
			Tags:                     "@kep-4381 && ~@interpose",
		},
		// The first whole kind; no memory capacity declared.
		"testdata/valid-several-whole-kinds.yaml": {
			DriverName:          "accel.example.com",
			Capabilities:        []string{"partitionableDevices"},
			DeviceClassName:     "gpu.accel.example.com",
			UUIDAttribute:       "uuid",
			PartitionClassName:  "slice.gpu.accel.example.com",
			ProfileAttribute:    "profile",
			ParentUUIDAttribute: "parent",
			Observers:           []string{"cdi"},
		},
		"testdata/valid-minimal.yaml": {
			DriverName:      "gpu.example.com",
			DeviceClassName: "gpu.example.com",
			UUIDAttribute:   "uuid",
			Hardware:        true,
			Observers:       []string{"cdi"},
		},
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			d, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got := d.KitSettings()
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Settings{}, "DeviceKindNames")); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			for _, k := range d.DeviceKinds {
				if got.DeviceKindNames[k.DeviceClass] != k.Name {
					t.Errorf("DeviceKindNames[%s] = %q, want %q", k.DeviceClass, got.DeviceKindNames[k.DeviceClass], k.Name)
				}
			}
		})
	}
}

func TestKitSettingsFabric(t *testing.T) {
	t.Parallel()
	d, err := Load("testdata/valid-fabric.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := d.KitSettings()
	if s.CliqueAttribute != "gpu.example.com/nvlinkClique" || s.IMEXChannelClassName != "imex.gpu.example.com" {
		t.Errorf("fabric settings: clique attribute %q, channel class %q", s.CliqueAttribute, s.IMEXChannelClassName)
	}
	d, err = Load("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.KitSettings(); s.CliqueAttribute != "" || s.IMEXChannelClassName != "" {
		t.Errorf("no fabric, settings %q, %q", s.CliqueAttribute, s.IMEXChannelClassName)
	}
}
