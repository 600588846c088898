package observe

import (
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// Device is one allocation result of the driver under test, joined with the
// device's ResourceSlice entry: what the API server says a pod's claim got.
// A device of the node that is not allocated has no Claim and Request.
type Device struct {
	Claim   string
	Request string
	Pool    string
	Device  string
	// UUID is the device's UUID attribute; empty if it has none.
	UUID       string
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
}

// ID names the device as allocation results do: pool/device.
func (d Device) ID() string { return d.Pool + "/" + d.Device }

// SplitAttribute returns the domain and name of an attribute as the kit's
// configuration or a feature spells it; a bare name is in the driver's
// domain.
func SplitAttribute(driver, attr string) (domain, name string) {
	if d, n, ok := strings.Cut(attr, "/"); ok {
		return d, n
	}
	return driver, attr
}

// LookupAttribute finds attr (bare or domain/name) among a device's
// attributes, which spell the driver's own domain either way.
func LookupAttribute(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, driver, attr string) (resourceapi.DeviceAttribute, bool) {
	domain, name := SplitAttribute(driver, attr)
	if a, ok := attrs[resourceapi.QualifiedName(domain+"/"+name)]; ok {
		return a, true
	}
	if domain == driver {
		if a, ok := attrs[resourceapi.QualifiedName(name)]; ok {
			return a, true
		}
	}
	return resourceapi.DeviceAttribute{}, false
}

// AttributeString renders an attribute value for comparison and messages.
func AttributeString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	case a.StringValues != nil:
		return "[" + strings.Join(a.StringValues, ",") + "]"
	case a.IntValues != nil:
		s := make([]string, len(a.IntValues))
		for i, v := range a.IntValues {
			s[i] = strconv.FormatInt(v, 10)
		}
		return "[" + strings.Join(s, ",") + "]"
	case a.BoolValues != nil:
		s := make([]string, len(a.BoolValues))
		for i, v := range a.BoolValues {
			s[i] = strconv.FormatBool(v)
		}
		return "[" + strings.Join(s, ",") + "]"
	case a.VersionValues != nil:
		return "[" + strings.Join(a.VersionValues, ",") + "]"
	}
	return "<empty>"
}

// LookupCapacity finds a capacity (bare name or domain/name) of a device.
func LookupCapacity(capacity map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, driver, name string) (resourceapi.DeviceCapacity, bool) {
	domain, id := SplitAttribute(driver, name)
	if c, ok := capacity[resourceapi.QualifiedName(domain+"/"+id)]; ok {
		return c, true
	}
	if domain == driver {
		if c, ok := capacity[resourceapi.QualifiedName(id)]; ok {
			return c, true
		}
	}
	return resourceapi.DeviceCapacity{}, false
}
