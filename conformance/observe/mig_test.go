package observe

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/probe"
)

var testNames = PartitionNames{Driver: testDriver, UUID: "uuid", Profile: "profile", ParentUUID: "parentUUID", Memory: "memory"}

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

func memory(bytes int64) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: *resource.NewQuantity(bytes, resource.BinarySI)}}
}

// migPartition is a 1g.5gb-like partition of GPU parent as published.
func migPartition(name, profile, parent string, mem int64) Device {
	return Device{Pool: "n", Device: name,
		Attributes: attrs{"profile": str(profile), "parentUUID": str(parent), "type": str("mig")},
		Capacity:   memory(mem)}
}

// allocated are the devices as allocated to claim c: the kit takes a
// device's UUID from its uuid attribute.
func allocated(devices ...Device) []Device {
	var out []Device
	for _, d := range devices {
		d.Claim, d.Request = "c", "gpu"
		if u, ok := d.Attributes["uuid"]; ok {
			d.UUID = *u.StringValue
		}
		out = append(out, d)
	}
	return out
}

const gib5 = 4864 << 20

// migReport is a container that sees GPU 4 with one 1g.5gb MIG device,
// GI 13 CI 0, and its nodes.
func migReport() probe.Report {
	return probe.Report{
		Devices: []probe.DeviceNode{
			{Path: "/dev/null", Type: probe.CharDevice, Major: 1, Minor: 3},
			gpuNode(4),
			{Path: "/dev/nvidia-caps/nvidia-cap660", Type: probe.CharDevice, Major: 508, Minor: 660},
			{Path: "/dev/nvidia-caps/nvidia-cap661", Type: probe.CharDevice, Major: 508, Minor: 661},
		},
		NVML: probe.NVML{GPUs: []probe.GPU{{UUID: "GPU-4", Name: "NVIDIA A100-SXM4-40GB", Minor: 4, MIGEnabled: true,
			MIGDevices: []probe.MIGDevice{{UUID: "MIG-1", Name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", GPUInstance: 13, ComputeInstance: 0, MemoryTotal: gib5}}}}},
	}
}

func TestCheckMIGNVML(t *testing.T) {
	t.Parallel()
	p1g := migPartition("gpu-4-mig-1g.5gb-6", "1g.5gb", "GPU-4", gib5)
	whole := Device{Pool: "n", Device: "gpu-5", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("GPU-5")}}
	tests := map[string]struct {
		allocated []Device
		report    func(*probe.Report)
		want      []string
	}{
		"exactly the partition": {allocated: []Device{p1g}},
		"a whole GPU next to the partition": {
			allocated: []Device{p1g, whole},
			report: func(r *probe.Report) {
				r.NVML.GPUs = append(r.NVML.GPUs, probe.GPU{UUID: "GPU-5", Minor: 5})
			},
		},
		"MIG device of another profile": {
			allocated: []Device{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices[0].Name = "NVIDIA A100-SXM4-40GB MIG 2g.10gb" },
			want:      []string{`allocated partition n/gpu-4-mig-1g.5gb-6 (profile 1g.5gb, 5100273664 bytes of memory) has no MIG device "NVIDIA A100-SXM4-40GB MIG 1g.5gb" with that memory on GPU GPU-4`},
		},
		"pre-created MIG device with its UUID": {
			allocated: []Device{withUUID(p1g, "MIG-1")},
		},
		"pre-created MIG device with another UUID": {
			allocated: []Device{withUUID(p1g, "MIG-7")},
			want:      []string{"(profile 1g.5gb, 5100273664 bytes of memory, uuid MIG-7) has no MIG device"},
		},
		"MIG device with other memory": {
			allocated: []Device{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices[0].MemoryTotal = 2 * gib5 },
			want:      []string{"has no MIG device"},
		},
		"no MIG device": {
			allocated: []Device{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices = nil },
			want:      []string{"pod p: GPU GPU-4: NVML shows 0 MIG devices (none), 1 partitions are allocated (n/gpu-4-mig-1g.5gb-6 (1g.5gb))", "has no MIG device"},
		},
		"a second MIG device leaks": {
			allocated: []Device{p1g},
			report: func(r *probe.Report) {
				r.NVML.GPUs[0].MIGDevices = append(r.NVML.GPUs[0].MIGDevices, r.NVML.GPUs[0].MIGDevices[0])
				r.NVML.GPUs[0].MIGDevices[1].UUID = "MIG-2"
			},
			want: []string{"pod p: GPU GPU-4: NVML shows 2 MIG devices"},
		},
		"parent not visible": {
			allocated: []Device{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs = nil },
			want:      []string{"pod p: GPU GPU-4, the parent of allocated partitions n/gpu-4-mig-1g.5gb-6 (1g.5gb), is not visible through NVML in the container (NVML lists no GPUs)"},
		},
		"another GPU leaks": {
			allocated: []Device{p1g},
			report: func(r *probe.Report) {
				r.NVML.GPUs = append(r.NVML.GPUs, probe.GPU{UUID: "GPU-6", Minor: 6})
			},
			want: []string{"pod p: NVML in the container lists GPU GPU-6 (minor 6, 0 MIG devices), which is neither allocated"},
		},
		"whole GPU shows MIG devices": {
			allocated: []Device{whole},
			report: func(r *probe.Report) {
				r.NVML.GPUs = []probe.GPU{{UUID: "GPU-5", Minor: 5, MIGDevices: []probe.MIGDevice{{UUID: "MIG-9"}}}}
			},
			want: []string{"pod p: GPU GPU-5 is allocated whole, but NVML also shows 1 MIG devices on it"},
		},
		"device the kit cannot identify": {
			allocated: []Device{{Pool: "n", Device: "mystery"}},
			report:    func(r *probe.Report) { r.NVML.GPUs = nil },
			want:      []string{`allocated device n/mystery (claim c) has neither a "profile" and "parentUUID" attribute nor a "uuid" attribute`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := migReport()
			if tc.report != nil {
				tc.report(&r)
			}
			got := CheckMIGNVML("p", testNames, allocated(tc.allocated...), r)
			checkFindings(t, got, tc.want)
		})
	}
}

// checkFindings wants one finding per want entry, each containing it.
func checkFindings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d findings %q, want %d like %q", len(got), got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("finding %d: %q does not contain %q", i, got[i], want[i])
		}
	}
}

func TestCheckMIGDeviceNodes(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		report func(*probe.Report)
		want   []string
	}{
		// 3 + 4·135 + 13·9 = 660 is the access of GPU 4's GI 13, 661 that
		// of its CI 0 (the numbering of /proc/driver/nvidia-caps/mig-minors).
		"GPU and both capabilities": {},
		"CI capability missing": {
			report: func(r *probe.Report) { r.Devices = r.Devices[:3] },
			want:   []string{"pod p: no capability node /dev/nvidia-caps/nvidia-cap661 for the compute instance 13/0 of MIG device MIG-1 on GPU GPU-4"},
		},
		"capability with the wrong minor": {
			report: func(r *probe.Report) { r.Devices[2].Minor = 1 },
			want:   []string{"pod p: capability node /dev/nvidia-caps/nvidia-cap660 is c 508:1, expected a character device with minor 660"},
		},
		"MIG config capability leaks": {
			report: func(r *probe.Report) {
				r.Devices = append(r.Devices, probe.DeviceNode{Path: "/dev/nvidia-caps/nvidia-cap1", Type: probe.CharDevice, Major: 508, Minor: 1})
			},
			want: []string{"pod p: capability node /dev/nvidia-caps/nvidia-cap1 is not the capability of any MIG device NVML shows in the container"},
		},
		"GPU node missing": {
			report: func(r *probe.Report) { r.Devices = append(r.Devices[:1], r.Devices[2:]...) },
			want:   []string{"pod p: no device node /dev/nvidia4 (195:4) for GPU GPU-4"},
		},
		"another GPU node": {
			report: func(r *probe.Report) { r.Devices = append(r.Devices, gpuNode(7)) },
			want:   []string{"pod p: device node /dev/nvidia7 (195:7) gives access to a GPU NVML does not show"},
		},
		"nothing visible": {
			report: func(r *probe.Report) { r.NVML.GPUs = nil },
			want:   []string{"pod p: NVML shows no GPU in the container"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := migReport()
			if tc.report != nil {
				tc.report(&r)
			}
			checkFindings(t, CheckMIGDeviceNodes("p", r), tc.want)
		})
	}
}

// withUUID is d with a uuid attribute, as a pre-created MIG device has.
func withUUID(d Device, uuid string) Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str(uuid)}
	for k, v := range d.Attributes {
		attrs[k] = v
	}
	d.Attributes = attrs
	return d
}
