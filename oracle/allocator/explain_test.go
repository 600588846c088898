package allocator

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// TestExplainNamesTheCause: every reason in an explanation says what
// really stood in the way. Devices a request could not take because the
// search had given them to another request of the same claim, or to an
// earlier claim of the same call, are not "in use": nothing is allocated.
// Counters name the counter that ran out.
func TestExplainNamesTheCause(t *testing.T) {
	numaDevices := func() []resourceapi.Device {
		var out []resourceapi.Device
		for i := range 6 {
			out = append(out, gpuDevice(i, map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"numa": intAttr(int64(i / 3))}))
		}
		return out
	}
	tests := []struct {
		name      string
		in        instance
		want      []string
		wantNot   []string
		complete  bool
		allocated []string // devices in the allocated state
	}{{
		name: "devices taken by another request of the claim, then a constraint",
		in: instance{
			features: defaultFeatures,
			classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
			slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, numaDevices()...)},
			claims:   []*resourceapi.ResourceClaim{claimOf("c", matchAttr(testDriver+"/numa"), req("r", "gpu", 2), req("s", "gpu", 2))},
		},
		want: []string{
			"claim default/c, request s could not be satisfied: " +
				"constraint #0 (matchAttribute gpu.example.com/numa) cannot be met: request(s) r, s need 4 devices with one value of it, no value has more than 3 free devices that may match them",
			"devices gpu-0, gpu-1, gpu-2 and 2 more: taken by request r of this claim",
			"devices gpu-0, gpu-1, gpu-2 and 3 more: its gpu.example.com/numa differs from that of the devices already chosen for the claim (constraint #0, matchAttribute)",
		},
		wantNot: []string{"in use"},
	}, {
		name:    "devices taken by an earlier claim of the call",
		in:      overlapping(),
		want:    []string{"claim default/b, request r could not be satisfied", "devices gpu-0, gpu-1: taken by claim default/a, earlier in this call"},
		wantNot: []string{"in use"},
	}, {
		name: "devices allocated to other claims",
		in: instance{
			features: defaultFeatures,
			classes:  []*resourceapi.DeviceClass{gpuClass("gpu")},
			slices:   []*resourceapi.ResourceSlice{nodeSlice("s", 1, numaDevices()[:3]...)},
			claims:   []*resourceapi.ResourceClaim{claimOf("c", nil, req("r", "gpu", 2, `device.attributes["gpu.example.com"].index != 1`))},
		},
		allocated: []string{"gpu-0"},
		want:      []string{"request r could not be satisfied", "device gpu-0: already allocated to another claim"},
		wantNot:   []string{"in use"},
	}, {
		name: "a counter used up by devices chosen in this call",
		in:   h4(4, 4),
		want: []string{"device gpu-3: counter set gpu.example.com/node-1/gpu has too little memory left: it is used up by devices already chosen in this call (40 in all)"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.allocated) > 0 {
				tc.in.state = structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
				for _, d := range tc.allocated {
					tc.in.state.AllocatedDevices.Insert(structured.MakeDeviceID(testDriver, testNode, d))
				}
			}
			a := tc.in.newRef(t, DefaultOptions())
			a.completeOnly = tc.complete
			res, why, err := a.AllocateExplained(context.Background(), testNodeObj(), tc.in.claims)
			if err != nil || res != nil {
				t.Fatalf("got %v, %v; want no allocation", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(why, w) {
					t.Errorf("explanation does not say %q:\n%s", w, why)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(why, w) {
					t.Errorf("explanation says %q:\n%s", w, why)
				}
			}
		})
	}
}
