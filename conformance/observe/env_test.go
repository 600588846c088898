package observe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
)

func TestCheckEnv(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		env  map[string]string
		want []string
	}{
		"exactly the allocated device": {env: map[string]string{"DRAKIT_DEVICE_GPU_2": "GPU-2", "HOME": "/"}},
		"missing": {
			env:  map[string]string{},
			want: []string{"pod p: no environment variable DRAKIT_DEVICE_GPU_2 for allocated device node/gpu-2 (uuid GPU-2)"},
		},
		"wrong uuid": {
			env:  map[string]string{"DRAKIT_DEVICE_GPU_2": "GPU-5"},
			want: []string{"pod p: DRAKIT_DEVICE_GPU_2=GPU-5, but allocated device node/gpu-2 has uuid GPU-2"},
		},
		"extra device": {
			env:  map[string]string{"DRAKIT_DEVICE_GPU_2": "GPU-2", "DRAKIT_DEVICE_GPU_5": "GPU-5"},
			want: []string{"pod p: environment variable DRAKIT_DEVICE_GPU_5=GPU-5 names a device that is not allocated to the pod's claims"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := baseReport()
			r.Env = tc.env
			if diff := cmp.Diff(tc.want, CheckEnv("p", "DRAKIT_DEVICE_", []Device{gpu2}, r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeviceEnvName(t *testing.T) {
	t.Parallel()
	for device, want := range map[string]string{
		"gpu-0":          "DRAKIT_DEVICE_GPU_0",
		"gpu-12":         "DRAKIT_DEVICE_GPU_12",
		"mig.1g-5gb-0":   "DRAKIT_DEVICE_MIG_1G_5GB_0",
		"already_UPPER9": "DRAKIT_DEVICE_ALREADY_UPPER9",
	} {
		if got := DeviceEnvName("DRAKIT_DEVICE_", device); got != want {
			t.Errorf("DeviceEnvName(%q) = %q, want %q", device, got, want)
		}
	}
}

// TestCheckEnvPattern checks the plain driver's convention,
// PLAIN_DEVICE_{attribute:index}={device}: the allocated device's variable
// must be there, and the variable of another device of the node must not
// (a driver that injects one device too many).
func TestCheckEnvPattern(t *testing.T) {
	attrs := func(i int64) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"plain.drakit.dev/index": {IntValue: ptr.To(i)}}
	}
	env := &declaration.EnvVariable{Name: "PLAIN_DEVICE_{attribute:index}", Value: "{device}"}
	allocated := []Device{{Claim: "c", Pool: "n", Device: "dev-1", Attributes: attrs(1)}}
	node := []Device{{Pool: "n", Device: "dev-0", Attributes: attrs(0)}, {Pool: "n", Device: "dev-1", Attributes: attrs(1)}}
	check := func(e map[string]string) []string {
		return CheckEnvPattern("p", "plain.drakit.dev", "serial", env, allocated, node, probe.Report{Env: e})
	}
	if got := check(map[string]string{"PLAIN_DEVICE_1": "dev-1"}); len(got) != 0 {
		t.Errorf("exactly the allocated device: %v", got)
	}
	want := []string{
		"pod p: environment variable PLAIN_DEVICE_0=dev-0 names device n/dev-0, which is not allocated to the pod's claims",
	}
	if diff := cmp.Diff(want, check(map[string]string{"PLAIN_DEVICE_1": "dev-1", "PLAIN_DEVICE_0": "dev-0"})); diff != "" {
		t.Errorf("one device too many (-want +got):\n%s", diff)
	}
	want = []string{"pod p: no environment variable PLAIN_DEVICE_1 for allocated device n/dev-1 (want PLAIN_DEVICE_1=dev-1)"}
	if diff := cmp.Diff(want, check(map[string]string{})); diff != "" {
		t.Errorf("missing variable (-want +got):\n%s", diff)
	}
}
