package observe

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/conformance/probe"
)

func gpuNode(minor uint32) probe.DeviceNode {
	return probe.DeviceNode{Path: "/dev/nvidia" + strconv.FormatUint(uint64(minor), 10), Type: probe.CharDevice, Major: 195, Minor: minor}
}

// baseReport is what a container with GPU 2 (uuid GPU-2) allocated sees.
func baseReport() probe.Report {
	return probe.Report{
		Devices: []probe.DeviceNode{
			{Path: "/dev/null", Type: probe.CharDevice, Major: 1, Minor: 3},
			gpuNode(2),
			{Path: "/dev/nvidiactl", Type: probe.CharDevice, Major: 195, Minor: 255},
			{Path: "/dev/nvidia-modeset", Type: probe.CharDevice, Major: 195, Minor: 254},
		},
		Env:  map[string]string{"DRAKIT_DEVICE_GPU_2": "GPU-2", "PATH": "/bin"},
		NVML: probe.NVML{GPUs: []probe.GPU{{Index: 0, UUID: "GPU-2", Minor: 2, BusID: "0000:43:00.0"}}},
	}
}

var gpu2 = Device{Claim: "c", Request: "gpu", Pool: "node", Device: "gpu-2", UUID: "GPU-2"}

func TestCheckNVML(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		allocated []Device
		report    func(*probe.Report)
		want      []string
	}{
		"exactly the allocated GPU": {allocated: []Device{gpu2}},
		"allocated GPU missing": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.NVML.GPUs = nil },
			want:      []string{"pod p: allocated device node/gpu-2 (claim c, uuid GPU-2) is not visible through NVML in the container (NVML lists no GPUs)"},
		},
		"extra GPU leaks": {
			allocated: []Device{gpu2},
			report: func(r *probe.Report) {
				r.NVML.GPUs = append(r.NVML.GPUs, probe.GPU{Index: 1, UUID: "GPU-5", Minor: 5, BusID: "0000:9a:00.0"})
			},
			want: []string{"pod p: NVML in the container lists GPU GPU-5 (minor 5, bus 0000:9a:00.0), which is not allocated to the pod's claims"},
		},
		"NVML call failed": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.NVML = probe.NVML{Error: "count GPUs: ERROR_UNKNOWN"} },
			want: []string{
				"pod p: NVML in the container failed: count GPUs: ERROR_UNKNOWN",
				"pod p: allocated device node/gpu-2 (claim c, uuid GPU-2) is not visible through NVML in the container (NVML lists no GPUs)",
			},
		},
		// Not a finding about device access: the caller says that NVML
		// cannot judge (TestNVMLUnavailable).
		"NVML not loaded": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.NVML = probe.NVML{Unavailable: "initialize NVML: ERROR_LIBRARY_NOT_FOUND"} },
		},
		"device without UUID attribute": {
			allocated: []Device{{Claim: "c", Pool: "node", Device: "gpu-2"}},
			want: []string{
				`pod p: allocated device node/gpu-2 (claim c) has no "uuid" attribute in its ResourceSlice, so the kit cannot identify it`,
				"pod p: NVML in the container lists GPU GPU-2 (minor 2, bus 0000:43:00.0), which is not allocated to the pod's claims",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := baseReport()
			if tc.report != nil {
				tc.report(&r)
			}
			if diff := cmp.Diff(tc.want, CheckNVML("p", "uuid", tc.allocated, r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckDeviceNodes(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		allocated []Device
		report    func(*probe.Report)
		want      []string
	}{
		"exactly the allocated GPU's node": {allocated: []Device{gpu2}},
		"node missing": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.Devices = r.Devices[:1] },
			want:      []string{"pod p: no device node 195:2 (/dev/nvidia2) for allocated device node/gpu-2 (uuid GPU-2)"},
		},
		"extra GPU node": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.Devices = append(r.Devices, gpuNode(0), gpuNode(7)) },
			want: []string{
				"pod p: device node /dev/nvidia0 (195:0) gives access to a GPU that is not allocated to the pod's claims",
				"pod p: device node /dev/nvidia7 (195:7) gives access to a GPU that is not allocated to the pod's claims",
			},
		},
		"node at the wrong path": {
			allocated: []Device{gpu2},
			report: func(r *probe.Report) {
				r.Devices[1].Path = "/dev/gpus/2"
			},
			want: []string{"pod p: device node 195:2 of allocated device node/gpu-2 is at /dev/gpus/2, expected /dev/nvidia2"},
		},
		"block device 195:3 is no GPU": {
			allocated: []Device{gpu2},
			report: func(r *probe.Report) {
				r.Devices = append(r.Devices, probe.DeviceNode{Path: "/dev/sdz", Type: probe.BlockDevice, Major: 195, Minor: 3})
			},
		},
		"NVML does not list the allocated GPU": {
			allocated: []Device{gpu2},
			report:    func(r *probe.Report) { r.NVML.GPUs = nil },
			want: []string{
				"pod p: cannot tell which device node belongs to allocated device node/gpu-2 (uuid GPU-2): NVML in the container does not list it",
				"pod p: device node /dev/nvidia2 (195:2) gives access to a GPU that is not allocated to the pod's claims",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := baseReport()
			if tc.report != nil {
				tc.report(&r)
			}
			if diff := cmp.Diff(tc.want, CheckDeviceNodes("p", tc.allocated, r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// An NVML that could not be loaded is no finding of any NVML check, and
// NVMLUnavailable says why; a loaded NVML that shows the wrong GPU is.
func TestNVMLUnavailable(t *testing.T) {
	t.Parallel()
	r := baseReport()
	r.NVML = probe.NVML{Unavailable: "initialize NVML: ERROR_LIBRARY_NOT_FOUND", GPUs: []probe.GPU{}}
	want := "pod p: NVML could not be loaded in the container (initialize NVML: ERROR_LIBRARY_NOT_FOUND), so the kit cannot see its GPUs through NVML"
	if got := NVMLUnavailable("p", r); got != want {
		t.Errorf("NVMLUnavailable = %q, want %q", got, want)
	}
	names := PartitionNames{}
	for name, got := range map[string][]string{
		"CheckNVML":           CheckNVML("p", "uuid", []Device{gpu2}, r),
		"CheckDeviceNodes":    CheckDeviceNodes("p", []Device{gpu2}, r),
		"CheckMIGNVML":        CheckMIGNVML("p", names, []Device{gpu2}, r),
		"CheckMIGDeviceNodes": CheckMIGDeviceNodes("p", r),
	} {
		if len(got) != 0 {
			t.Errorf("%s with NVML unavailable: %q, want no findings about device access", name, got)
		}
	}
	loaded := baseReport()
	loaded.NVML.GPUs[0].UUID = "GPU-5"
	if NVMLUnavailable("p", loaded) != "" || len(CheckNVML("p", "uuid", []Device{gpu2}, loaded)) == 0 {
		t.Errorf("a loaded NVML showing GPU-5 for allocated GPU-2: no finding")
	}
}
