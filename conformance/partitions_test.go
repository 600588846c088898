package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

var testNames = DefaultConfig().partitionNames()

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

func memory(bytes int64) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: *resource.NewQuantity(bytes, resource.BinarySI)}}
}

func consumes(set string, counters map[string]int64) []resourceapi.DeviceCounterConsumption {
	c := resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: map[string]resourceapi.Counter{}}
	for k, v := range counters {
		c.Counters[k] = resourceapi.Counter{Value: *resource.NewQuantity(v, resource.DecimalSI)}
	}
	return []resourceapi.DeviceCounterConsumption{c}
}

// migPartition is a published 1g.5gb-like partition of GPU-4 at start.
func migPartition(name, profile, parent string, mem int64, slices ...string) publishedDevice {
	counters := map[string]int64{"multiprocessors": 14}
	for _, s := range slices {
		counters[s] = 1
	}
	return publishedDevice{Node: "n", Pool: "n", Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": str(profile), "parentUUID": str(parent), "type": str("mig")},
		Capacity:   memory(mem), Consumes: consumes("gpu-4-counter-set", counters)}
}

func allocated(d publishedDevice) observe.Device {
	a := observe.Device{Claim: "c", Request: "gpu", Pool: d.Pool, Device: d.Name, Attributes: d.Attributes, Capacity: d.Capacity}
	if u, ok := d.Attributes["uuid"]; ok {
		a.UUID = *u.StringValue
	}
	return a
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
	p1g := migPartition("gpu-4-mig-1g.5gb-6", "1g.5gb", "GPU-4", gib5, "memory-slice-6")
	whole := publishedDevice{Pool: "n", Name: "gpu-5", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("GPU-5")}}
	tests := map[string]struct {
		allocated []publishedDevice
		report    func(*probe.Report)
		want      []string
	}{
		"exactly the partition": {allocated: []publishedDevice{p1g}},
		"a whole GPU next to the partition": {
			allocated: []publishedDevice{p1g, whole},
			report: func(r *probe.Report) {
				r.NVML.GPUs = append(r.NVML.GPUs, probe.GPU{UUID: "GPU-5", Minor: 5})
			},
		},
		"MIG device of another profile": {
			allocated: []publishedDevice{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices[0].Name = "NVIDIA A100-SXM4-40GB MIG 2g.10gb" },
			want:      []string{`allocated partition n/gpu-4-mig-1g.5gb-6 (profile 1g.5gb, 5100273664 bytes of memory) has no MIG device "NVIDIA A100-SXM4-40GB MIG 1g.5gb" with that memory on GPU GPU-4`},
		},
		"pre-created MIG device with its UUID": {
			allocated: []publishedDevice{withUUID(p1g, "MIG-1")},
		},
		"pre-created MIG device with another UUID": {
			allocated: []publishedDevice{withUUID(p1g, "MIG-7")},
			want:      []string{"(profile 1g.5gb, 5100273664 bytes of memory, uuid MIG-7) has no MIG device"},
		},
		"MIG device with other memory": {
			allocated: []publishedDevice{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices[0].MemoryTotal = 2 * gib5 },
			want:      []string{"has no MIG device"},
		},
		"no MIG device": {
			allocated: []publishedDevice{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs[0].MIGDevices = nil },
			want:      []string{"pod p: GPU GPU-4: NVML shows 0 MIG devices (none), 1 partitions are allocated (n/gpu-4-mig-1g.5gb-6 (1g.5gb))", "has no MIG device"},
		},
		"a second MIG device leaks": {
			allocated: []publishedDevice{p1g},
			report: func(r *probe.Report) {
				r.NVML.GPUs[0].MIGDevices = append(r.NVML.GPUs[0].MIGDevices, r.NVML.GPUs[0].MIGDevices[0])
				r.NVML.GPUs[0].MIGDevices[1].UUID = "MIG-2"
			},
			want: []string{"pod p: GPU GPU-4: NVML shows 2 MIG devices"},
		},
		"parent not visible": {
			allocated: []publishedDevice{p1g},
			report:    func(r *probe.Report) { r.NVML.GPUs = nil },
			want:      []string{"pod p: GPU GPU-4, the parent of allocated partitions n/gpu-4-mig-1g.5gb-6 (1g.5gb), is not visible through NVML in the container (NVML lists no GPUs)"},
		},
		"another GPU leaks": {
			allocated: []publishedDevice{p1g},
			report: func(r *probe.Report) {
				r.NVML.GPUs = append(r.NVML.GPUs, probe.GPU{UUID: "GPU-6", Minor: 6})
			},
			want: []string{"pod p: NVML in the container lists GPU GPU-6 (minor 6, 0 MIG devices), which is neither allocated"},
		},
		"whole GPU shows MIG devices": {
			allocated: []publishedDevice{whole},
			report: func(r *probe.Report) {
				r.NVML.GPUs = []probe.GPU{{UUID: "GPU-5", Minor: 5, MIGDevices: []probe.MIGDevice{{UUID: "MIG-9"}}}}
			},
			want: []string{"pod p: GPU GPU-5 is allocated whole, but NVML also shows 1 MIG devices on it"},
		},
		"device the kit cannot identify": {
			allocated: []publishedDevice{{Pool: "n", Name: "mystery"}},
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
			var alloc []observe.Device
			for _, d := range tc.allocated {
				alloc = append(alloc, allocated(d))
			}
			got := checkMIGNVML("p", testNames, alloc, r)
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
			checkFindings(t, checkMIGDeviceNodes("p", r), tc.want)
		})
	}
}

func TestCheckCounters(t *testing.T) {
	t.Parallel()
	sets := map[string]map[string]resourceapi.CounterSet{"n": {"gpu-4-counter-set": {Name: "gpu-4-counter-set", Counters: map[string]resourceapi.Counter{
		"multiprocessors": {Value: resource.MustParse("98")}, "memory-slice-0": {Value: resource.MustParse("1")}, "memory-slice-4": {Value: resource.MustParse("1")},
	}}}}
	a := migPartition("a", "3g.20gb", "GPU-4", 0, "memory-slice-0")
	b := migPartition("b", "3g.20gb", "GPU-4", 0, "memory-slice-4")
	overlap := migPartition("c", "3g.20gb", "GPU-4", 0, "memory-slice-0")
	stranger := migPartition("d", "1g.5gb", "GPU-4", 0, "memory-slice-9")
	orphan := migPartition("e", "1g.5gb", "GPU-4", 0)
	orphan.Consumes[0].CounterSet = "gone"
	checkFindings(t, checkCounters([]publishedDevice{a, b}, sets), nil)
	checkFindings(t, checkCounters([]publishedDevice{a, overlap}, sets),
		[]string{"counter set gpu-4-counter-set of pool n: the allocated devices consume 2 of counter memory-slice-0, the set holds 1"})
	checkFindings(t, checkCounters([]publishedDevice{stranger}, sets),
		[]string{"counter memory-slice-9 is consumed but not in counter set gpu-4-counter-set of pool n"})
	checkFindings(t, checkCounters([]publishedDevice{orphan}, sets),
		[]string{"device n/e consumes counter set gone, which no slice of pool n declares"})
}

// TestPartitionSelectors evaluates the kit's CEL selectors the way the
// scheduler does, on partitions, a whole GPU and a device of another driver.
func TestPartitionSelectors(t *testing.T) {
	t.Parallel()
	p1g := migPartition("p1g", "1g.5gb", "GPU-4", gib5)
	p3g := migPartition("p3g", "3g.20gb", "GPU-4", 19968<<20)
	other := migPartition("other", "3g.20gb", "GPU-5", 19968<<20)
	whole := publishedDevice{Pool: "n", Name: "gpu-4", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str("GPU-4")}, Capacity: memory(40 << 30)}
	bare := publishedDevice{Pool: "n", Name: "bare"}
	all := []publishedDevice{p1g, p3g, other, whole, bare}
	tests := map[string]struct {
		exprs []string
		want  []string
	}{
		"profile prefix":           {exprs: []string{testNames.profilePrefixSelector("3g.")}, want: []string{"p3g", "other"}},
		"prefix and parent":        {exprs: []string{testNames.profilePrefixSelector("3g."), testNames.parentSelector("GPU-4")}, want: []string{"p3g"}},
		"at least 20G":             {exprs: []string{testNames.memorySelector(resource.MustParse("20G"))}, want: []string{"p3g", "other", "gpu-4"}},
		"more than the 3g has":     {exprs: []string{testNames.memorySelector(*resource.NewQuantity(19968<<20+1, resource.BinarySI))}, want: []string{"gpu-4"}},
		"whole GPU by UUID":        {exprs: []string{uuidSelector(testDriver, "uuid", "GPU-4")}, want: []string{"gpu-4"}},
		"a prefix nothing matches": {exprs: []string{testNames.profilePrefixSelector("7g.")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := selectDevices(context.Background(), testNames.driver, all, tc.exprs)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range got {
				names = append(names, d.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := selectDevices(context.Background(), testNames.driver, all, []string{"device.attributes["}); err == nil || !strings.Contains(err.Error(), "compile CEL selector") {
		t.Errorf("a selector that does not compile: got %v", err)
	}
}

func TestPartitionsWithPrefix(t *testing.T) {
	t.Parallel()
	static := migPartition("static", "1g.5gb", "GPU-3", gib5)
	static.Consumes = nil // pre-created MIG devices draw on no counters
	devices := []publishedDevice{
		migPartition("b", "1g.5gb", "GPU-5", gib5), migPartition("a", "1g.10gb", "GPU-4", gib5),
		migPartition("c", "2g.10gb", "GPU-4", gib5), static,
	}
	got := testNames.partitionsWithPrefix(devices, "1g.")
	var ids []string
	for _, p := range got {
		ids = append(ids, p.Name+"@"+p.ParentUUID)
	}
	if diff := cmp.Diff([]string{"a@GPU-4", "b@GPU-5"}, ids); diff != "" {
		t.Errorf("partitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"GPU-4", "GPU-5"}, parents(got)); diff != "" {
		t.Errorf("parents (-want +got):\n%s", diff)
	}
}

func TestCDIDeviceNodes(t *testing.T) {
	t.Parallel()
	spec := `cdiVersion: 0.6.0
kind: gpu.drakit.dev/claim
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
devices:
- name: c-gpu-4-mig
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia4
      hostPath: /emu/dev/nvidia4
    - path: /dev/nvidia-caps/nvidia-cap661
`
	got, err := cdiDeviceNodes([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/dev/nvidiactl", "/dev/nvidia4", "/dev/nvidia-caps/nvidia-cap661"}, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if _, err := cdiDeviceNodes([]byte("devices: {")); err == nil {
		t.Error("a malformed spec parsed")
	}
}

// withUUID is d with a uuid attribute, as a pre-created MIG device has.
func withUUID(d publishedDevice, uuid string) publishedDevice {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": str(uuid)}
	for k, v := range d.Attributes {
		attrs[k] = v
	}
	d.Attributes = attrs
	return d
}
