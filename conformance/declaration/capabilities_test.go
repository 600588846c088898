package declaration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKnownCapabilities pins every capability to its KEP, feature gate and
// stage as the DRA 1.37 spec digest (shared/docs/dra-1.37-spec.md, §0.4 and
// the KEP sections) gives them for Kubernetes 1.37.2.
func TestKnownCapabilities(t *testing.T) {
	t.Parallel()
	type entry struct {
		KEP      int
		Gate     string
		Stage    Stage
		Requires []CapabilityName
	}
	want := map[CapabilityName]entry{
		CapabilityDeviceHealth:              {4680, "ResourceHealthStatus", StageBeta, nil},
		CapabilityDeviceHealthMessages:      {4680, "ResourceHealthStatusMessage", StageBeta, []CapabilityName{CapabilityDeviceHealth}},
		CapabilityPartitionableDevices:      {4815, "DRAPartitionableDevices", StageBeta, nil},
		CapabilityPerDeviceNodeSelection:    {4815, "DRAPartitionableDevices", StageBeta, nil},
		CapabilityDeviceStatus:              {4817, "DRAResourceClaimDeviceStatus", StageGA, nil},
		CapabilityBindingConditions:         {5007, "DRADeviceBindingConditions", StageBeta, nil},
		CapabilityAdminAccess:               {5018, "DRAAdminAccess", StageGA, nil},
		CapabilityDeviceTaints:              {5055, "DRADeviceTaints", StageGA, nil},
		CapabilityConsumableCapacity:        {5075, "DRAConsumableCapacity", StageBeta, nil},
		CapabilityFractionalCapacityRange:   {5075, "DRAFractionalCapacityRange", StageBeta, []CapabilityName{CapabilityConsumableCapacity}},
		CapabilityDeviceMetadata:            {5304, "", StageBeta, nil},
		CapabilityListTypeAttributes:        {5491, "DRAListTypeAttributes", StageAlpha, nil},
		CapabilityNodeAllocatableResources:  {5517, "DRANodeAllocatableResources", StageAlpha, nil},
		CapabilityPartitionableDevicesType:  {4815, "DRAPartitionableDevicesType", StageAlpha, []CapabilityName{CapabilityPartitionableDevices}},
		CapabilityOptionalNodeOperations:    {5945, "DRAOptionalNodeOperations", StageAlpha, nil},
		CapabilityDeviceCompatibilityGroups: {5963, "DRADeviceCompatibilityGroups", StageAlpha, []CapabilityName{CapabilityPartitionableDevices}},
		CapabilityNUMANodeAttribute:         {6072, "", StageGA, nil},
	}
	got := map[CapabilityName]entry{}
	lastKEP := 0
	for _, c := range KnownCapabilities() {
		if _, dup := got[c.Name]; dup {
			t.Errorf("%s listed twice", c.Name)
		}
		got[c.Name] = entry{c.KEP, c.FeatureGate, c.Stage, c.Requires}
		if c.KEP < lastKEP {
			t.Errorf("%s (KEP-%d) after KEP-%d: the list is ordered by KEP", c.Name, c.KEP, lastKEP)
		}
		lastKEP = c.KEP
		if c.Meaning == "" {
			t.Errorf("%s has no meaning", c.Name)
		}
		if l, ok := LookupCapability(c.Name); !ok || !cmp.Equal(l, c) {
			t.Errorf("LookupCapability(%s) = %+v, %v; want %+v", c.Name, l, ok, c)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if _, ok := LookupCapability("partitionable"); ok {
		t.Error("LookupCapability found an unknown name")
	}
}

func TestKnownCapabilitiesAreCopies(t *testing.T) {
	t.Parallel()
	list := KnownCapabilities()
	list[0].Name = "changed"
	for i := range list {
		if len(list[i].Requires) > 0 {
			list[i].Requires[0] = "changed"
		}
	}
	for _, c := range KnownCapabilities() {
		if c.Name == "changed" || (len(c.Requires) > 0 && c.Requires[0] == "changed") {
			t.Fatalf("changing the returned list changed the package's: %+v", c)
		}
	}
}

func TestCapabilityString(t *testing.T) {
	t.Parallel()
	c, _ := LookupCapability(CapabilityPartitionableDevices)
	if got := c.String(); got != "partitionableDevices (KEP-4815)" {
		t.Errorf("String() = %q", got)
	}
}

func TestClaimed(t *testing.T) {
	t.Parallel()
	d := &Declaration{Capabilities: map[CapabilityName]bool{
		CapabilityAdminAccess:  true,
		CapabilityDeviceTaints: false,
		"madeUp":               true,
	}}
	for name, want := range map[CapabilityName]bool{
		CapabilityAdminAccess:  true,
		CapabilityDeviceTaints: false,
		CapabilityDeviceStatus: false,
		"madeUp":               false,
	} {
		if got := d.Claimed(name); got != want {
			t.Errorf("Claimed(%s) = %v, want %v", name, got, want)
		}
	}
	if (&Declaration{}).Claimed(CapabilityAdminAccess) {
		t.Error("a declaration without capabilities claims adminAccess")
	}
}
