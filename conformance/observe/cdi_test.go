package observe

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"drakit.dev/drakit/conformance/probe"
)

// cdiTestDir writes a spec of two devices: dev-0 sets an environment entry,
// a mount and /dev/null as /dev/plain0; dev-1 sets its own entry and mount.
func cdiTestDir(t *testing.T) *cdi.Cache {
	t.Helper()
	dir := t.TempDir()
	spec := `cdiVersion: "0.6.0"
kind: plain.drakit.dev/device
containerEdits:
  env: ["PLAIN_SPEC=1"]
devices:
- name: dev-0
  containerEdits:
    env: ["PLAIN_DEVICE_0=dev-0"]
    deviceNodes: [{path: /dev/plain0, hostPath: /dev/null}]
    mounts: [{hostPath: /tmp, containerPath: /var/run/plain/dev-0, options: [ro, bind]}]
- name: dev-1
  containerEdits:
    env: ["PLAIN_DEVICE_1=dev-1"]
    mounts: [{hostPath: /tmp, containerPath: /var/run/plain/dev-1, options: [ro, bind]}]
`
	if err := os.WriteFile(filepath.Join(dir, "plain.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	return cache
}

func TestCDIEditsOf(t *testing.T) {
	cache := cdiTestDir(t)
	got, err := CDIEditsOf(cache, "plain.drakit.dev/device=dev-0")
	if err != nil {
		t.Fatal(err)
	}
	want := ContainerEdits{
		env:    []string{"PLAIN_SPEC=1", "PLAIN_DEVICE_0=dev-0"},
		nodes:  map[string]string{"/dev/plain0": "c 1:3"},
		mounts: []string{"/var/run/plain/dev-0"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ContainerEdits{})); diff != "" {
		t.Errorf("CDIEditsOf (-want +got):\n%s", diff)
	}
	if _, err := CDIEditsOf(cache, "plain.drakit.dev/device=dev-9"); err == nil || !strings.Contains(err.Error(), "dev-9 are in no spec") {
		t.Errorf("CDIEditsOf an unknown device = %v", err)
	}
}

// TestCheckCDIEdits runs the DRA contract check over a container that shows
// exactly its device's edits, and over the defects a driver can have.
func TestCheckCDIEdits(t *testing.T) {
	cache := cdiTestDir(t)
	want, err := CDIEditsOf(cache, "plain.drakit.dev/device=dev-0")
	if err != nil {
		t.Fatal(err)
	}
	other, err := CDIEditsOf(cache, "plain.drakit.dev/device=dev-1")
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]ContainerEdits{"plain.drakit.dev/device=dev-1": other}
	exact := func() probe.Report {
		return probe.Report{
			Env:     map[string]string{"PLAIN_SPEC": "1", "PLAIN_DEVICE_0": "dev-0", "PATH": "/bin"},
			Devices: []probe.DeviceNode{{Path: "/dev/plain0", Type: "c", Major: 1, Minor: 3}, {Path: "/dev/null", Type: "c", Major: 1, Minor: 3}},
			Mounts:  []probe.Mount{{Path: "/"}, {Path: "/var/run/plain/dev-0", ReadOnly: true}},
		}
	}
	tests := map[string]struct {
		change func(*probe.Report)
		want   []string
	}{
		"exactly the prepared edits": {},
		"an environment entry missing": {
			change: func(r *probe.Report) { delete(r.Env, "PLAIN_DEVICE_0") },
			want:   []string{"pod p: the CDI edits prepared for its claims set PLAIN_DEVICE_0=dev-0, the container has no PLAIN_DEVICE_0"},
		},
		"an environment entry with another value": {
			change: func(r *probe.Report) { r.Env["PLAIN_DEVICE_0"] = "dev-1" },
			want:   []string{"pod p: the CDI edits prepared for its claims set PLAIN_DEVICE_0=dev-0, the container has PLAIN_DEVICE_0=dev-1"},
		},
		"a device node missing": {
			change: func(r *probe.Report) { r.Devices = r.Devices[1:] },
			want:   []string{"pod p: the CDI edits prepared for its claims add device node /dev/plain0 (c 1:3), the container has none"},
		},
		"a mount missing": {
			change: func(r *probe.Report) { r.Mounts = r.Mounts[:1] },
			want:   []string{"pod p: the CDI edits prepared for its claims mount /var/run/plain/dev-0, the container has no mount there"},
		},
		"one device too many": {
			change: func(r *probe.Report) {
				r.Env["PLAIN_DEVICE_1"] = "dev-1"
				r.Mounts = append(r.Mounts, probe.Mount{Path: "/var/run/plain/dev-1", ReadOnly: true})
			},
			want: []string{
				"pod p: the container has PLAIN_DEVICE_1=dev-1, an edit of CDI device plain.drakit.dev/device=dev-1, which was not prepared for its claims",
				"pod p: the container has mount /var/run/plain/dev-1 of CDI device plain.drakit.dev/device=dev-1, which was not prepared for its claims",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := exact()
			if tc.change != nil {
				tc.change(&r)
			}
			if diff := cmp.Diff(tc.want, CheckCDIEdits("p", want, others, ObservedOf(r))); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckPreparedDevices(t *testing.T) {
	allocated := []Device{{Claim: "c", Pool: "node", Device: "dev-0"}, {Claim: "other", Pool: "node", Device: "dev-2"}}
	if got := CheckPreparedDevices("c", allocated, []PreparedDevice{{PoolName: "node", DeviceName: "dev-0", CDIDeviceIDs: []string{"k=dev-0"}}}); len(got) != 0 {
		t.Errorf("exactly the allocated device: %v", got)
	}
	got := CheckPreparedDevices("c", allocated, []PreparedDevice{{PoolName: "node", DeviceName: "dev-1"}})
	want := []string{
		"claim c: the driver prepared device node/dev-1, which is not allocated to the claim",
		"claim c: the driver prepared device node/dev-1 without a CDI device: the container cannot get it",
		"claim c: device node/dev-0 is allocated to the claim, the driver did not prepare it",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestCheckNodesUnder(t *testing.T) {
	t.Parallel()
	want := ContainerEdits{nodes: map[string]string{"/dev/nvidia0": "c 195:0", "/dev/nvidiactl": "c 195:255", "/dev/fuse": "c 10:229"}}
	seen := Observed{nodes: map[string]string{"/dev/nvidia0": "c 195:0", "/dev/nvidia3": "c 195:3", "/dev/null": "c 1:3"}}
	got := CheckNodesUnder("p", "/dev/nvidia", want, seen)
	wantFindings := []string{
		"pod p: the CDI edits prepared for its claims inject /dev/nvidiactl, which the container does not have",
		"pod p: the container has /dev/nvidia3, which none of the CDI edits prepared for its claims injects",
	}
	if !slices.Equal(got, wantFindings) {
		t.Errorf("findings:\n got %q\nwant %q", got, wantFindings)
	}
	if got := CheckNodesUnder("p", "/dev/nvidia", want, Observed{nodes: want.nodes}); len(got) != 0 {
		t.Errorf("the same nodes: %q", got)
	}
}
