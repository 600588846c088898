package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// TestCheckEnvPattern checks the plain driver's convention,
// PLAIN_DEVICE_{attribute:index}={device}: the allocated device's variable
// must be there, and the variable of another device of the node must not
// (a driver that injects one device too many).
func TestCheckEnvPattern(t *testing.T) {
	attrs := func(i int64) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"plain.drakit.dev/index": {IntValue: ptr.To(i)}}
	}
	env := &declaration.EnvVariable{Name: "PLAIN_DEVICE_{attribute:index}", Value: "{device}"}
	allocated := []observe.Device{{Claim: "c", Pool: "n", Device: "dev-1", Attributes: attrs(1)}}
	node := []publishedDevice{{Pool: "n", Name: "dev-0", Attributes: attrs(0)}, {Pool: "n", Name: "dev-1", Attributes: attrs(1)}}
	check := func(e map[string]string) []string {
		return checkEnvPattern("p", "plain.drakit.dev", "serial", env, allocated, node, probe.Report{Env: e})
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
