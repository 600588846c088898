package scenario

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API's limits on the objects of a scenario, as resource.k8s.io/v1 at
// k8s.io/api v0.37.2 exports them and the API server's validation
// (k8s.io/kubernetes v1.37.2 pkg/apis/resource/validation) applies them.

// MaxDevicesPerSlice is the API limit on devices in one ResourceSlice.
const MaxDevicesPerSlice = resourceapi.ResourceSliceMaxDevices

// MaxDevicesPerSliceWithAdvancedFeatures is the limit when a device of the
// slice has taints, consumes counters or has a list-type attribute.
const MaxDevicesPerSliceWithAdvancedFeatures = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures

// maxValidValues is the API server's CapacityRequestPolicyDiscreteMaxOptions
// (k8s.io/kubernetes pkg/apis/resource): resource.k8s.io/v1 documents
// "Must not contain more than 10 entries" for requestPolicy.validValues but
// exports no constant for it.
const maxValidValues = 10

// tooMany reports a list or map of n entries where the API allows max.
func tooMany(p *field.Path, n, limit int) field.ErrorList {
	if n <= limit {
		return nil
	}
	return field.ErrorList{field.TooMany(p, n, limit)}
}

// tooLong reports a string longer than the API allows.
func tooLong(p *field.Path, s string, limit int) field.ErrorList {
	if len(s) <= limit {
		return nil
	}
	return field.ErrorList{field.TooLong(p, "", limit)}
}

// claimLimits checks a claim's devices against the API's list limits. The
// CEL limits are checked with the selectors (validateSelectors).
func claimLimits(p *field.Path, spec *resourceapi.DeviceClaim) field.ErrorList {
	errs := tooMany(p.Child("requests"), len(spec.Requests), resourceapi.DeviceRequestsMaxSize)
	errs = append(errs, tooMany(p.Child("constraints"), len(spec.Constraints), resourceapi.DeviceConstraintsMaxSize)...)
	errs = append(errs, tooMany(p.Child("config"), len(spec.Config), resourceapi.DeviceConfigMaxSize)...)
	for i, r := range spec.Requests {
		rp := p.Child("requests").Index(i)
		errs = append(errs, tooMany(rp.Child("firstAvailable"), len(r.FirstAvailable), resourceapi.FirstAvailableDeviceRequestMaxSize)...)
		if e := r.Exactly; e != nil {
			ep := rp.Child("exactly")
			errs = append(errs, tooMany(ep.Child("selectors"), len(e.Selectors), resourceapi.DeviceSelectorsMaxSize)...)
			errs = append(errs, tooMany(ep.Child("derivedAttributes"), len(e.DerivedAttributes), resourceapi.DeviceDerivedAttributesMaxSize)...)
		}
		for j, sr := range r.FirstAvailable {
			sp := rp.Child("firstAvailable").Index(j)
			errs = append(errs, tooMany(sp.Child("selectors"), len(sr.Selectors), resourceapi.DeviceSelectorsMaxSize)...)
			errs = append(errs, tooMany(sp.Child("derivedAttributes"), len(sr.DerivedAttributes), resourceapi.DeviceDerivedAttributesMaxSize)...)
		}
	}
	for i, c := range spec.Constraints {
		errs = append(errs, tooMany(p.Child("constraints").Index(i).Child("requests"), len(c.Requests), resourceapi.DeviceRequestsMaxSize)...)
	}
	for i, c := range spec.Config {
		errs = append(errs, tooMany(p.Child("config").Index(i).Child("requests"), len(c.Requests), resourceapi.DeviceRequestsMaxSize)...)
	}
	return errs
}

// allocationLimits checks an allocation result against the API's limits:
// AllocationResultsMaxSize results, and config from class and claim.
func allocationLimits(p *field.Path, a *resourceapi.AllocationResult) field.ErrorList {
	errs := tooMany(p.Child("devices", "results"), len(a.Devices.Results), resourceapi.AllocationResultsMaxSize)
	return append(errs, tooMany(p.Child("devices", "config"), len(a.Devices.Config), 2*resourceapi.DeviceConfigMaxSize)...)
}

// classLimits checks a DeviceClass against the API's list limits.
func classLimits(p *field.Path, spec *resourceapi.DeviceClassSpec) field.ErrorList {
	errs := tooMany(p.Child("selectors"), len(spec.Selectors), resourceapi.DeviceSelectorsMaxSize)
	return append(errs, tooMany(p.Child("config"), len(spec.Config), resourceapi.DeviceConfigMaxSize)...)
}

// sliceLimits checks a ResourceSlice's spec against the API's limits; the
// devices' own limits are deviceLimits.
func sliceLimits(p *field.Path, spec *resourceapi.ResourceSliceSpec) field.ErrorList {
	errs := tooLong(p.Child("driver"), spec.Driver, resourceapi.DriverNameMaxLength)
	errs = append(errs, tooLong(p.Child("pool", "name"), spec.Pool.Name, resourceapi.PoolNameMaxLength)...)
	if advancedFeatures(spec) {
		if n := len(spec.Devices); n > MaxDevicesPerSliceWithAdvancedFeatures {
			e := field.TooMany(p.Child("devices"), n, MaxDevicesPerSliceWithAdvancedFeatures)
			e.Detail += " when a device has taints, consumes counters or has list-type attributes"
			errs = append(errs, e)
		}
	} else {
		errs = append(errs, tooMany(p.Child("devices"), len(spec.Devices), MaxDevicesPerSlice)...)
	}
	errs = append(errs, tooMany(p.Child("sharedCounters"), len(spec.SharedCounters), resourceapi.ResourceSliceMaxCounterSets)...)
	for i, cs := range spec.SharedCounters {
		errs = append(errs, tooMany(p.Child("sharedCounters").Index(i).Child("counters"), len(cs.Counters), resourceapi.ResourceSliceMaxCountersPerCounterSet)...)
	}
	for i := range spec.Devices {
		errs = append(errs, deviceLimits(p.Child("devices").Index(i), &spec.Devices[i])...)
	}
	return errs
}

// advancedFeatures reports whether a device of the slice has taints,
// consumes counters or has a list-type attribute, which lowers the
// slice's device limit.
func advancedFeatures(spec *resourceapi.ResourceSliceSpec) bool {
	for _, d := range spec.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return true
		}
		for _, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				return true
			}
		}
	}
	return false
}

// deviceLimits checks one device against the API's per-device limits.
func deviceLimits(p *field.Path, d *resourceapi.Device) field.ErrorList {
	var errs field.ErrorList
	if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	values := 0
	for _, a := range d.Attributes {
		if n := len(a.BoolValues) + len(a.IntValues) + len(a.StringValues) + len(a.VersionValues); n > 0 {
			values += n
		} else {
			values++
		}
	}
	if values > resourceapi.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p, values, fmt.Sprintf("the total number of attribute values must not exceed %d", resourceapi.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	for _, name := range sortedKeys(stringKeys(d.Attributes)) {
		ap := p.Child("attributes").Key(name)
		errs = append(errs, nameLimits(ap, name)...)
		a := d.Attributes[resourceapi.QualifiedName(name)]
		if a.StringValue != nil {
			errs = append(errs, tooLong(ap.Child("string"), *a.StringValue, resourceapi.DeviceAttributeMaxValueLength)...)
		}
		if a.VersionValue != nil {
			errs = append(errs, tooLong(ap.Child("version"), *a.VersionValue, resourceapi.DeviceAttributeMaxValueLength)...)
		}
		for i, v := range a.StringValues {
			errs = append(errs, tooLong(ap.Child("strings").Index(i), v, resourceapi.DeviceAttributeMaxValueLength)...)
		}
		for i, v := range a.VersionValues {
			errs = append(errs, tooLong(ap.Child("versions").Index(i), v, resourceapi.DeviceAttributeMaxValueLength)...)
		}
	}
	for _, name := range sortedKeys(stringKeys(d.Capacity)) {
		cp := p.Child("capacity").Key(name)
		errs = append(errs, nameLimits(cp, name)...)
		if pol := d.Capacity[resourceapi.QualifiedName(name)].RequestPolicy; pol != nil {
			errs = append(errs, tooMany(cp.Child("requestPolicy", "validValues"), len(pol.ValidValues), maxValidValues)...)
		}
	}
	errs = append(errs, tooMany(p.Child("taints"), len(d.Taints), resourceapi.DeviceTaintsMaxLength)...)
	errs = append(errs, tooMany(p.Child("bindingConditions"), len(d.BindingConditions), resourceapi.BindingConditionsMaxSize)...)
	errs = append(errs, tooMany(p.Child("bindingFailureConditions"), len(d.BindingFailureConditions), resourceapi.BindingFailureConditionsMaxSize)...)
	errs = append(errs, tooMany(p.Child("consumesCounters"), len(d.ConsumesCounters), resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice)...)
	for i, cc := range d.ConsumesCounters {
		cp := p.Child("consumesCounters").Index(i)
		errs = append(errs, tooMany(cp.Child("counters"), len(cc.Counters), resourceapi.ResourceSliceMaxCountersPerDeviceCounterConsumption)...)
		errs = append(errs, tooMany(cp.Child("compatibilityGroups"), len(cc.CompatibilityGroups), resourceapi.DeviceCompatibilityGroupsMaxSize)...)
	}
	return errs
}

// nameLimits checks the length of an attribute or capacity name, "<domain>/<identifier>"
// or a bare identifier.
func nameLimits(p *field.Path, name string) field.ErrorList {
	domain, id, ok := strings.Cut(name, "/")
	if !ok {
		domain, id = "", name
	}
	var errs field.ErrorList
	if len(domain) > resourceapi.DeviceMaxDomainLength {
		e := field.TooLong(p, "", resourceapi.DeviceMaxDomainLength)
		e.Detail = "the domain " + e.Detail
		errs = append(errs, e)
	}
	if len(id) > resourceapi.DeviceMaxIDLength {
		e := field.TooLong(p, "", resourceapi.DeviceMaxIDLength)
		e.Detail = "the identifier " + e.Detail
		errs = append(errs, e)
	}
	return errs
}
