package kit

import (
	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/report"
)

// Fields ApplyDeclaration can set, by their Config field name.
const (
	fieldDriverName          = "DriverName"
	fieldDeviceClassName     = "DeviceClassName"
	fieldUUIDAttribute       = "UUIDAttribute"
	fieldDeviceEnvPrefix     = "DeviceEnvPrefix"
	fieldDeviceEnvName       = "DeviceEnvName"
	fieldDeviceEnvValue      = "DeviceEnvValue"
	fieldPartitionClassName  = "PartitionClassName"
	fieldProfileAttribute    = "ProfileAttribute"
	fieldParentUUIDAttribute = "ParentUUIDAttribute"
	fieldMemoryCapacity      = "MemoryCapacity"
	fieldDriverNamespace     = "DriverNamespace"
	fieldDriverPodSelector   = "DriverPodSelector"
	fieldHardware            = "Hardware"
	fieldObservers           = "Observers"
	fieldCapabilities        = "Capabilities"
	fieldDriverVersion       = "DriverVersion"
	fieldPCIVendor           = "PCIVendor"
	fieldPCIClass            = "PCIClass"
	fieldSharedClassName     = "SharedDeviceClassName"
	fieldSharedIdentity      = "SharedIdentityAttribute"
	fieldSharedCapacity      = "SharedCapacity"
	fieldPCIeRootPeerClasses = "PCIeRootPeerClasses"
	fieldFaultResponses      = "FaultResponses"
	fieldCliqueAttribute     = "CliqueAttribute"
	fieldIMEXChannelClass    = "IMEXChannelClassName"
	fieldNUMANodesAttribute  = "NUMANodesAttribute"
)

// DeclaredFields are the Config fields a driver declaration sets.
func DeclaredFields() []string {
	return []string{fieldDriverName, fieldDeviceClassName, fieldUUIDAttribute, fieldDeviceEnvPrefix, fieldDeviceEnvName, fieldDeviceEnvValue, fieldPartitionClassName,
		fieldProfileAttribute, fieldParentUUIDAttribute, fieldMemoryCapacity, fieldDriverNamespace, fieldDriverPodSelector,
		fieldHardware, fieldObservers, fieldCapabilities, fieldDriverVersion, fieldPCIVendor, fieldPCIClass,
		fieldSharedClassName, fieldSharedIdentity, fieldSharedCapacity, fieldPCIeRootPeerClasses, fieldFaultResponses,
		fieldCliqueAttribute, fieldIMEXChannelClass, fieldNUMANodesAttribute}
}

// ApplyDeclaration sets the driver settings of a declaration (its
// KitSettings) on c, except the fields explicit reports as given otherwise
// (a flag on the command line): those keep their value. A declaration says
// everything about its driver, so a setting it leaves empty (no partitions,
// no per-device variable, no NVML) is empty in c too, and the scenarios that
// need it are skipped with their reasons.
func (c *Config) ApplyDeclaration(d *declaration.Declaration, explicit func(field string) bool) {
	s := d.KitSettings()
	set := func(field string, dst *string, v string) {
		if !explicit(field) {
			*dst = v
		}
	}
	set(fieldDriverName, &c.DriverName, s.DriverName)
	set(fieldDeviceClassName, &c.DeviceClassName, s.DeviceClassName)
	set(fieldUUIDAttribute, &c.UUIDAttribute, s.UUIDAttribute)
	set(fieldDeviceEnvPrefix, &c.DeviceEnvPrefix, s.DeviceEnvPrefix)
	set(fieldDeviceEnvName, &c.DeviceEnvName, s.DeviceEnvName)
	set(fieldDeviceEnvValue, &c.DeviceEnvValue, s.DeviceEnvValue)
	set(fieldPartitionClassName, &c.PartitionClassName, s.PartitionClassName)
	set(fieldProfileAttribute, &c.ProfileAttribute, s.ProfileAttribute)
	set(fieldParentUUIDAttribute, &c.ParentUUIDAttribute, s.ParentUUIDAttribute)
	set(fieldMemoryCapacity, &c.MemoryCapacity, s.MemoryCapacity)
	set(fieldDriverVersion, &c.DriverVersion, s.DriverVersion)
	set(fieldPCIVendor, &c.PCIVendor, s.PCIVendor)
	set(fieldPCIClass, &c.PCIClass, s.PCIClass)
	set(fieldDriverNamespace, &c.DriverNamespace, s.DriverNamespace)
	set(fieldDriverPodSelector, &c.DriverPodSelector, s.DriverPodSelector)
	set(fieldSharedClassName, &c.SharedDeviceClassName, s.SharedDeviceClassName)
	set(fieldSharedIdentity, &c.SharedIdentityAttribute, s.SharedIdentityAttribute)
	set(fieldSharedCapacity, &c.SharedCapacity, s.SharedCapacity)
	set(fieldCliqueAttribute, &c.CliqueAttribute, s.CliqueAttribute)
	set(fieldIMEXChannelClass, &c.IMEXChannelClassName, s.IMEXChannelClassName)
	set(fieldNUMANodesAttribute, &c.NUMANodesAttribute, s.NUMANodesAttribute)
	if !explicit(fieldPCIeRootPeerClasses) {
		c.PCIeRootPeerClasses = s.PCIeRootPeerClasses
	}
	c.OpaqueConfig = s.OpaqueConfig
	c.DeviceKindNames = map[string]string{}
	for _, k := range d.DeviceKinds {
		c.DeviceKindNames[k.DeviceClass] = k.Name
	}
	c.TorusChipClassName, c.TorusSubsliceClassName, c.TorusShapeAttribute = s.TorusChipClass, s.TorusSubsliceClass, s.TorusShapeAttribute
	c.BindingConditions, c.BindingFailureConditions, c.BindingConditionsSetBy = s.BindingConditions, s.BindingFailureConditions, s.BindingConditionsSetBy
	if !explicit(fieldFaultResponses) {
		c.FaultResponses = s.FaultResponses
	}
	c.FaultCommand = s.FaultCommand
	if !explicit(fieldHardware) {
		c.Hardware = s.Hardware
	}
	if !explicit(fieldObservers) {
		c.Observers = s.Observers
	}
	c.DeviceNodes, c.Mounts = s.DeviceNodes, s.Mounts
	if !explicit(fieldCapabilities) {
		c.Capabilities = s.Capabilities
	}
}

// deviceKinds are the kinds of device the run requests, by their DeviceClass
// (whole devices, partitions, shared devices), each with the name its
// declaration gives it (DeviceKindNames) or, without one, a generic name.
func (c *Config) deviceKinds() []report.DeviceKind {
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
func (c *Config) observes(o declaration.Observer) bool {
	for _, x := range c.Observers {
		if declaration.Observer(x) == o {
			return true
		}
	}
	return false
}

// deviceEnv is the per-device environment variable of Config's
// DeviceEnvName and DeviceEnvValue patterns (declaration pattern syntax).
func (c *Config) deviceEnv() *declaration.EnvVariable {
	if c.DeviceEnvName == "" {
		return nil
	}
	value := c.DeviceEnvValue
	if value == "" {
		value = declaration.DefaultEnvValue
	}
	return &declaration.EnvVariable{Name: c.DeviceEnvName, Value: value}
}

// injected is what the driver declares a container gets per device of its
// whole-device kind, for the observers.
func (c *Config) Injected() observe.Injected {
	return observe.Injected{Driver: c.DriverName, Identity: c.UUIDAttribute, Env: c.deviceEnv(), DeviceNodes: c.DeviceNodes, Mounts: c.Mounts}
}
