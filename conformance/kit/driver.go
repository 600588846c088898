package kit

import (
	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// DriverSettings are the driver under test as the scenarios read it: the
// run's declaration (Config.Declaration) through KitSettings, computed
// once per run and never set otherwise.
type DriverSettings struct {
	declaration.Settings
}

// driverSettings are d's settings; the zero settings without one.
func driverSettings(d *declaration.Declaration) DriverSettings {
	if d == nil {
		return DriverSettings{}
	}
	return DriverSettings{d.KitSettings()}
}

// DeviceClass is the DeviceClass the kit's claims request.
func (c DriverSettings) DeviceClass() string {
	if c.DeviceClassName != "" {
		return c.DeviceClassName
	}
	return c.DriverName
}

// deviceKinds are the kinds of device the run requests, by their DeviceClass
// (whole devices, partitions, shared devices), each with the name its
// declaration gives it (DeviceKindNames) or, without one, a generic name.
func (c DriverSettings) deviceKinds() []report.DeviceKind {
	kind := func(class, generic string) report.DeviceKind {
		if name := c.DeviceKindNames[class]; name != "" {
			return report.DeviceKind{Name: name, DeviceClass: class}
		}
		return report.DeviceKind{Name: generic, DeviceClass: class}
	}
	kinds := []report.DeviceKind{kind(c.DeviceClass(), "devices")}
	if c.PartitionClassName != "" {
		kinds = append(kinds, kind(c.PartitionClassName, "partitions"))
	}
	if c.SharedDeviceClassName != "" {
		kinds = append(kinds, kind(c.SharedDeviceClassName, "shared devices"))
	}
	return kinds
}

// observes reports whether the driver declares the observer.
func (c DriverSettings) observes(o declaration.Observer) bool {
	for _, x := range c.Observers {
		if declaration.Observer(x) == o {
			return true
		}
	}
	return false
}

// deviceEnv is the per-device environment variable of the DeviceEnvName
// and DeviceEnvValue patterns; nil when DeviceEnvPrefix says it.
func (c DriverSettings) deviceEnv() *declaration.EnvVariable {
	if c.DeviceEnvName == "" {
		return nil
	}
	value := c.DeviceEnvValue
	if value == "" {
		value = declaration.DefaultEnvValue
	}
	return &declaration.EnvVariable{Name: c.DeviceEnvName, Value: value}
}

// Injected is what the driver declares a container gets per device of its
// whole-device kind, for the observers.
func (c DriverSettings) Injected() observe.Injected {
	return observe.Injected{Driver: c.DriverName, Identity: c.UUIDAttribute, Env: c.deviceEnv(), DeviceNodes: c.DeviceNodes, Mounts: c.Mounts}
}

// restartSkipReason explains why restart scenarios do not apply.
const RestartSkipReason = "the kit cannot find the driver's pods: no driver pod selector configured (driver.pods of the declaration, or --driver-pod-selector)"

// multiNodeClasses are the DeviceClasses whose devices the multi-node
// scenario considers: the driver's, and a declared torus's sub-slice class
// (sub-slices are the devices of a torus driver that several nodes share).
func (c DriverSettings) MultiNodeClasses() []string {
	classes := []string{c.DeviceClass()}
	if c.TorusSubsliceClassName != "" && c.TorusSubsliceClassName != c.DeviceClass() {
		classes = append(classes, c.TorusSubsliceClassName)
	}
	return classes
}
