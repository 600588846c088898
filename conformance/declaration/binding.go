package declaration

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxBindingConditions is the API's limit of bindingConditions, and of
// bindingFailureConditions, per device (dra-1.37-spec.md §0.3).
const maxBindingConditions = 4

// BindingConditions are the binding conditions (KEP-5007) every device of
// the driver publishes, and who sets them in the claim's status.devices
// once the scheduler allocated the device: the driver (or a controller of
// its own), or the conformance kit standing in for an external attach
// controller.
type BindingConditions struct {
	// Conditions are the device's bindingConditions, in the order it
	// lists them: 1 to 4 label-name-like condition types, unique.
	// Required.
	Conditions []string `json:"conditions"`
	// FailureConditions are the device's bindingFailureConditions: 1 to 4
	// unique condition types, none of them in Conditions. Required.
	FailureConditions []string `json:"failureConditions"`
	// SetBy says who sets the conditions: SetByKit or SetByDriver.
	// Required.
	SetBy ConditionSetter `json:"setBy"`
}

// ConditionSetter is who sets a device's binding conditions.
type ConditionSetter string

// The setters.
const (
	// SetByKit: the driver leaves its binding conditions to an attach
	// controller outside it; in a conformance run the kit's attach
	// controller sets them through the API, as the scenarios say.
	SetByKit ConditionSetter = "kit"
	// SetByDriver: the driver sets them itself in status.devices, which
	// needs the capability deviceStatus (KEP-4817); the scenarios in which
	// the kit's attach controller decides the outcome skip.
	SetByDriver ConditionSetter = "driver"
)

// validateBindingConditions checks the bindingConditions section against
// the capability: the section goes with the claimed capability, its lists
// follow the API server's rules for a device's lists (§9, behaviours 1
// and 2), and a driver that sets its conditions itself claims deviceStatus.
func (d *Declaration) validateBindingConditions(path *field.Path) field.ErrorList {
	claimed := d.Capabilities[CapabilityBindingConditions]
	b := d.BindingConditions
	switch {
	case b == nil && claimed:
		return field.ErrorList{field.Invalid(field.NewPath("capabilities").Key(string(CapabilityBindingConditions)), true,
			"claimed, but the declaration has no bindingConditions: the kit needs the condition types the devices publish and who sets them")}
	case b == nil:
		return nil
	}
	var errs field.ErrorList
	if !claimed {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("binding conditions need the capability %s claimed", mustCapability(CapabilityBindingConditions))))
	}
	errs = append(errs, conditionTypes(path.Child("conditions"), b.Conditions, nil)...)
	errs = append(errs, conditionTypes(path.Child("failureConditions"), b.FailureConditions, b.Conditions)...)
	sp := path.Child("setBy")
	switch b.SetBy {
	case SetByKit:
	case SetByDriver:
		if !d.Capabilities[CapabilityDeviceStatus] {
			errs = append(errs, field.Invalid(sp, b.SetBy, fmt.Sprintf("a driver that sets its binding conditions in status.devices needs the capability %s claimed", mustCapability(CapabilityDeviceStatus))))
		}
	case "":
		errs = append(errs, field.Required(sp, `"kit" (the kit stands in for an attach controller) or "driver"`))
	default:
		errs = append(errs, field.NotSupported(sp, b.SetBy, []ConditionSetter{SetByKit, SetByDriver}))
	}
	return errs
}

// conditionTypes checks one list: 1 to 4 qualified names, unique, none in
// others.
func conditionTypes(path *field.Path, list, others []string) field.ErrorList {
	switch {
	case len(list) == 0:
		return field.ErrorList{field.Required(path, "1 to 4 condition types, e.g. example.com/attached")}
	case len(list) > maxBindingConditions:
		return field.ErrorList{field.TooMany(path, len(list), maxBindingConditions)}
	}
	var errs field.ErrorList
	seen := map[string]*field.Path{}
	for i, c := range list {
		ip := path.Index(i)
		for _, msg := range validation.IsQualifiedName(c) {
			errs = append(errs, field.Invalid(ip, c, msg))
		}
		errs = append(errs, unique(ip, c, seen)...)
		if slices.Contains(others, c) {
			errs = append(errs, field.Invalid(ip, c, "is also a binding condition: the lists must not overlap"))
		}
	}
	return errs
}
