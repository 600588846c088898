package plaindriver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

func wantDevice(name string, index int, serial string) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"index":  {IntValue: ptr.To(int64(index))},
			"serial": {StringValue: ptr.To(serial)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"size": {Value: resource.MustParse("1Gi")}},
	}
}

func TestBuildResources(t *testing.T) {
	t.Parallel()
	correct := []resourceapi.Device{
		wantDevice("dev-0", 0, "PLN-12ca17b4-0"),
		wantDevice("dev-1", 1, "PLN-12ca17b4-1"),
		wantDevice("dev-2", 2, "PLN-12ca17b4-2"),
	}
	for _, tc := range []struct {
		defect Defect
		want   []resourceapi.Device
	}{
		{"", correct},
		{DefectExtraDevice, correct},
		{DefectLeaveCDISpec, correct},
		// One more device, the next index, named like the first.
		{DefectDuplicateDeviceNames, append(correct[:3:3], wantDevice("dev-0", 3, "PLN-12ca17b4-3"))},
	} {
		t.Run("defect="+string(tc.defect), func(t *testing.T) {
			t.Parallel()
			got := buildResources(testNode, testNode, nodeDevices(testNode, 3, ""), "", tc.defect)
			want := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
				testNode: {Slices: []resourceslice.Slice{{Devices: tc.want}}},
			}}
			// Quantities compare by value, as the apiserver stores them.
			opt := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })
			if diff := cmp.Diff(want, got, opt); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}
