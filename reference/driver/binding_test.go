package driver

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// With BindingConditions every published device, whole GPU or MIG
// placement, carries the driver's two condition types; without it none
// does.
func TestBuildResourcesBindingConditions(t *testing.T) {
	t.Parallel()
	wantBC, wantBFC := []string{"gpu.drakit.dev/attached"}, []string{"gpu.drakit.dev/attach-failed"}
	env := newMIGEnv(t)
	for name, inv := range map[string]*Inventory{"whole GPUs": testInventory(), "dynamic MIG": env.inventory} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			devs, _, _, _ := poolSlices(t, inv, publishOptions{DriverName: testDriver, BindingConditions: true})
			if len(devs) == 0 {
				t.Fatal("no devices published")
			}
			for _, d := range devs {
				if !slices.Equal(d.BindingConditions, wantBC) || !slices.Equal(d.BindingFailureConditions, wantBFC) {
					t.Errorf("device %s: bindingConditions %q, bindingFailureConditions %q; want %q, %q",
						d.Name, d.BindingConditions, d.BindingFailureConditions, wantBC, wantBFC)
				}
				if d.BindsToNode != nil {
					t.Errorf("device %s sets bindsToNode: a node-local GPU needs no node pinning", d.Name)
				}
			}
			devs, _, _, _ = poolSlices(t, inv, publishOptions{DriverName: testDriver})
			if i := slices.IndexFunc(devs, func(d resourceapi.Device) bool {
				return len(d.BindingConditions)+len(d.BindingFailureConditions) > 0
			}); i >= 0 {
				t.Errorf("without BindingConditions device %s has binding conditions %q/%q", devs[i].Name, devs[i].BindingConditions, devs[i].BindingFailureConditions)
			}
		})
	}
}

// The condition types pass the API server's rules for them (dra-1.37-spec.md
// §9, behaviours 1 and 2): both lists set, at most 4 entries each,
// qualified names, no overlap; also for the longest driver name.
func TestBindingConditionTypesValid(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{testDriver, "a", "d23456789.123456789.123456789.123456789.123456789.1234567.com"} {
		bc, bfc := BindingConditionTypes(driver)
		if len(bc) == 0 || len(bc) > 4 || len(bfc) == 0 || len(bfc) > 4 {
			t.Errorf("driver %s: %d conditions and %d failure conditions, want 1 to 4 each", driver, len(bc), len(bfc))
		}
		for _, c := range slices.Concat(bc, bfc) {
			if msgs := validation.IsQualifiedName(c); len(msgs) > 0 {
				t.Errorf("driver %s: condition type %q: %v", driver, c, msgs)
			}
		}
		for _, c := range bc {
			if slices.Contains(bfc, c) {
				t.Errorf("driver %s: %q is in both lists", driver, c)
			}
		}
	}
	// The caller owns the slices.
	bc, _ := BindingConditionTypes(testDriver)
	bc[0] = "changed"
	if again, _ := BindingConditionTypes(testDriver); again[0] != "gpu.drakit.dev/attached" {
		t.Errorf("BindingConditionTypes shares its slices: %q", again)
	}
}
