package observe

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
)

// plainDevice is device dev-<i> of pool n with int attribute index, as the
// plain driver publishes it.
func plainDevice(i int, claim string) Device {
	return Device{Claim: claim, Pool: "n", Device: "dev-" + strconv.Itoa(i),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To(int64(i))}}}
}

var injected = Injected{Driver: "plain.drakit.dev", Identity: "serial",
	Env:         &declaration.EnvVariable{Name: "PLAIN_DEVICE_{attribute:index}", Value: "{device}"},
	DeviceNodes: []declaration.DeviceNode{{Path: "/dev/plain{attribute:index}", Type: "c", Major: "240", Minor: "{attribute:index}"}},
	Mounts:      []declaration.Mount{{Path: "/var/run/plain/{device}", ReadOnly: true}},
}

// plainReport is what a container with dev-1 allocated sees.
func plainReport() probe.Report {
	return probe.Report{
		Env: map[string]string{"PLAIN_DEVICE_1": "dev-1", "PATH": "/bin"},
		Devices: []probe.DeviceNode{
			{Path: "/dev/null", Type: probe.CharDevice, Major: 1, Minor: 3},
			{Path: "/dev/plain1", Type: probe.CharDevice, Major: 240, Minor: 1},
		},
		Mounts: []probe.Mount{{Path: "/"}, {Path: "/var/run/plain/dev-1", ReadOnly: true}, {Path: "/etc/hosts"}},
	}
}

func plainNode() []Device {
	return []Device{plainDevice(0, ""), plainDevice(1, ""), plainDevice(2, "")}
}

func TestCheckDeclaredDeviceNodes(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		report func(*probe.Report)
		want   []string
	}{
		"exactly the allocated device": {},
		"node missing": {
			report: func(r *probe.Report) { r.Devices = r.Devices[:1] },
			want:   []string{"pod p: no device node /dev/plain1 (c 240:1) for allocated device n/dev-1 (claim c)"},
		},
		"node of another device": {
			report: func(r *probe.Report) { r.Devices[1].Minor = 2 },
			want:   []string{"pod p: device node /dev/plain1 of allocated device n/dev-1 is c 240:2, the declaration says /dev/plain1 (c 240:1)"},
		},
		"extra device's node": {
			report: func(r *probe.Report) {
				r.Devices = append(r.Devices, probe.DeviceNode{Path: "/dev/plain2", Type: probe.CharDevice, Major: 240, Minor: 2})
			},
			want: []string{"pod p: device node /dev/plain2 (c 240:2) of device n/dev-2 is in the container, which is not allocated to the pod's claims"},
		},
		"extra device's numbers at another path": {
			report: func(r *probe.Report) {
				r.Devices = append(r.Devices, probe.DeviceNode{Path: "/dev/other", Type: probe.CharDevice, Major: 240, Minor: 0})
			},
			want: []string{"pod p: device node /dev/other is c 240:0, device n/dev-0's node /dev/plain0 (c 240:0), which is not allocated to the pod's claims"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := plainReport()
			if tc.report != nil {
				tc.report(&r)
			}
			got := CheckDeclaredDeviceNodes("p", injected, []Device{plainDevice(1, "c")}, plainNode(), r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
	noIndex := Device{Claim: "c", Pool: "n", Device: "dev-9"}
	want := []string{`pod p: allocated device n/dev-9: device node: expand pattern "/dev/plain{attribute:index}" for device dev-9: {attribute:index}: the device does not publish a value the pattern needs`}
	if diff := cmp.Diff(want, CheckDeclaredDeviceNodes("p", injected, []Device{noIndex}, nil, plainReport())); diff != "" {
		t.Errorf("device without the attribute (-want +got):\n%s", diff)
	}
}

func TestCheckDeclaredMounts(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		report func(*probe.Report)
		want   []string
	}{
		"exactly the allocated device": {},
		"mount missing": {
			report: func(r *probe.Report) { r.Mounts = r.Mounts[:1] },
			want:   []string{"pod p: no mount /var/run/plain/dev-1 for allocated device n/dev-1 (claim c)"},
		},
		"mount at the wrong path": {
			report: func(r *probe.Report) { r.Mounts[1].Path = "/var/run/plain/dev-1x" },
			want:   []string{"pod p: no mount /var/run/plain/dev-1 for allocated device n/dev-1 (claim c)"},
		},
		"read-write where read-only is declared": {
			report: func(r *probe.Report) { r.Mounts[1].ReadOnly = false },
			want:   []string{"pod p: mount /var/run/plain/dev-1 of allocated device n/dev-1 is read-write, the declaration says read-only"},
		},
		"read-only shadowed by a later read-write mount": {
			report: func(r *probe.Report) { r.Mounts = append(r.Mounts, probe.Mount{Path: "/var/run/plain/dev-1"}) },
			want:   []string{"pod p: mount /var/run/plain/dev-1 of allocated device n/dev-1 is read-write, the declaration says read-only"},
		},
		"extra device's mount": {
			report: func(r *probe.Report) {
				r.Mounts = append(r.Mounts, probe.Mount{Path: "/var/run/plain/dev-0", ReadOnly: true})
			},
			want: []string{"pod p: mount /var/run/plain/dev-0 of device n/dev-0 is in the container, which is not allocated to the pod's claims"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := plainReport()
			if tc.report != nil {
				tc.report(&r)
			}
			got := CheckDeclaredMounts("p", injected, []Device{plainDevice(1, "c")}, plainNode(), r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShownDevices(t *testing.T) {
	t.Parallel()
	only := func(f func(*Injected)) Injected {
		in := Injected{Driver: injected.Driver, Identity: injected.Identity}
		f(&in)
		return in
	}
	r := plainReport()
	r.Mounts = append(r.Mounts, probe.Mount{Path: "/var/run/plain/dev-2"})
	r.Env["PLAIN_DEVICE_0"] = "dev-0"
	r.Devices = append(r.Devices, probe.DeviceNode{Path: "/dev/plain2", Type: probe.CharDevice, Major: 240, Minor: 9}) // not dev-2's numbers
	tests := map[string]struct {
		in   Injected
		want []string
	}{
		"env":          {in: only(func(in *Injected) { in.Env = injected.Env }), want: []string{"n/dev-0", "n/dev-1"}},
		"device nodes": {in: only(func(in *Injected) { in.DeviceNodes = injected.DeviceNodes }), want: []string{"n/dev-1"}},
		"mounts":       {in: only(func(in *Injected) { in.Mounts = injected.Mounts }), want: []string{"n/dev-1", "n/dev-2"}},
		"all":          {in: injected, want: []string{"n/dev-0", "n/dev-1", "n/dev-2"}},
		"nothing":      {in: only(func(*Injected) {}), want: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, ShownDevices(tc.in, false, plainNode(), r)); diff != "" {
				t.Errorf("shown (-want +got):\n%s", diff)
			}
		})
	}
	gpu := Device{Pool: "n", Device: "gpu-2", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": {StringValue: ptr.To("GPU-2")}}}
	in := Injected{Driver: "gpu.drakit.dev", Identity: "uuid"}
	if got := ShownDevices(in, true, []Device{gpu}, baseReport()); !cmp.Equal(got, []string{"n/gpu-2"}) {
		t.Errorf("through NVML: %v, want n/gpu-2", got)
	}
	if got := ShownDevices(in, false, []Device{gpu}, baseReport()); len(got) != 0 {
		t.Errorf("without nvml: %v, want none", got)
	}
}
