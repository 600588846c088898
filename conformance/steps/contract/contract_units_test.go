package contract

import (
	"slices"
	"strings"
	"testing"

	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/observe"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

func TestLeftoverCDIDevices(t *testing.T) {
	defined := map[string][]string{"v/c=claim-0": {"x.json"}, "v/c=common": {"base.json"}, "v/c=shared": {"x.json"}}
	other := map[string]kit.PreparedClaim{"uid-2": {DriverState: map[string]struct{ Devices []observe.PreparedDevice }{
		"other.example": {Devices: []observe.PreparedDevice{{CDIDeviceIDs: []string{"v/c=shared"}}}},
	}}}
	ids := []string{"v/c=claim-0", "v/c=common", "v/c=gone", "v/c=shared"}
	got := leftoverCDIDevices(ids, defined, map[string]bool{"v/c=common": true}, other)
	if want := []string{"v/c=claim-0 in x.json"}; !slices.Equal(got, want) {
		t.Errorf("leftoverCDIDevices = %v, want %v: a device defined before or another prepared claim's is not the claim's", got, want)
	}
}

func TestRepeatedPrepareFindings(t *testing.T) {
	want := []string{"v/c=a", "v/c=b"}
	answer := func(ids ...string) *drapb.NodePrepareResourceResponse {
		return &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{CdiDeviceIds: ids}}}
	}
	for _, tc := range []struct {
		Name   string
		answer *drapb.NodePrepareResourceResponse
		finds  string
	}{
		{"the same devices in another order", answer("v/c=b", "v/c=a"), ""},
		{"no entry", nil, "no entry for the claim"},
		{"an error", &drapb.NodePrepareResourceResponse{Error: "already prepared"}, "failed: already prepared"},
		{"other devices", answer("v/c=a", "v/c=c"), "returned CDI devices [v/c=a v/c=c], the kubelet got [v/c=a v/c=b]"},
	} {
		err := repeatedPrepareFindings("gpu", tc.answer, want)
		if (err == nil) != (tc.finds == "") || (err != nil && !strings.Contains(err.Error(), tc.finds)) {
			t.Errorf("%s: %v, want %q", tc.Name, err, tc.finds)
		}
	}
}
