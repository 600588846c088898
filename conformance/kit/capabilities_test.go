package kit

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

func TestCapabilityEvidence(t *testing.T) {
	t.Parallel()
	counters := resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "counters"}, Spec: resourceapi.ResourceSliceSpec{
		Pool:           resourceapi.ResourcePool{Name: "p"},
		SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0-counters"}},
	}}
	devices := resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "devices"}, Spec: resourceapi.ResourceSliceSpec{
		Pool:                   resourceapi.ResourcePool{Name: "p"},
		PartitionTypeAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/profile")),
		Devices: []resourceapi.Device{
			{Name: "plain"},
			{Name: "mig", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counters", CompatibilityGroups: []string{"a"}}}},
			{Name: "numa", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{numaNodeAttribute: {IntValue: ptr.To[int64](0)}}},
			{Name: "shared", AllowMultipleAllocations: ptr.To(true), Taints: []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		},
	}}
	got := capabilityEvidence([]resourceapi.ResourceSlice{counters, devices})
	want := map[declaration.CapabilityName]string{
		declaration.CapabilityPartitionableDevices:      "ResourceSlice counters declares sharedCounters (counter set gpu-0-counters)",
		declaration.CapabilityPartitionableDevicesType:  "ResourceSlice devices sets partitionTypeAttribute gpu.example.com/profile",
		declaration.CapabilityDeviceCompatibilityGroups: "device p/mig (ResourceSlice devices) names compatibilityGroups [a]",
		declaration.CapabilityNUMANodeAttribute:         "device p/numa (ResourceSlice devices) publishes resource.kubernetes.io/numaNode",
		declaration.CapabilityConsumableCapacity:        "device p/shared (ResourceSlice devices) sets allowMultipleAllocations",
		declaration.CapabilityDeviceTaints:              "device p/shared (ResourceSlice devices) has taints",
	}
	if len(got) != len(want) {
		t.Errorf("evidence for %d capabilities, want %d: %v", len(got), len(want), got)
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: %q, want %q", c, got[c], w)
		}
	}
	if ev := capabilityEvidence([]resourceapi.ResourceSlice{{Spec: resourceapi.ResourceSliceSpec{Devices: []resourceapi.Device{{Name: "plain"}}}}}); len(ev) != 0 {
		t.Errorf("plain devices: evidence %v, want none", ev)
	}
}

func TestClaimsAndUnclaimedReason(t *testing.T) {
	t.Parallel()
	var c DriverSettings
	if c.Claims(declaration.CapabilityPartitionableDevices) {
		t.Error("no settings claim partitionableDevices")
	}
	c.Capabilities = []string{"numaNodeAttribute"}
	if !c.Claims(declaration.CapabilityNUMANodeAttribute) || c.Claims(declaration.CapabilityDeviceTaints) {
		t.Errorf("claims with %v wrong", c.Capabilities)
	}
	// The report counts these skips as unclaimed capabilities.
	reason := unclaimedReason(declaration.CapabilityNUMANodeAttribute)
	if !strings.HasPrefix(reason, "capability numaNodeAttribute (KEP-6072) unclaimed: ") {
		t.Errorf("reason %q", reason)
	}
	if !report.UnclaimedSkip(reason) {
		t.Errorf("report does not take %q for an unclaimed capability", reason)
	}
}
