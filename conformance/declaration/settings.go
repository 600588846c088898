package declaration

import (
	"fmt"
	"slices"
)

// Settings are the declaration as the conformance kit's scenarios read it,
// derived from it by KitSettings and never given otherwise: the kinds of
// the three roles (RoleWhole, RolePartitions, RoleShared) flattened to
// their fields, and per-device variables of the reference driver's
// convention as a prefix.
type Settings struct {
	DriverName string
	// DriverVersion is driver.version.
	DriverVersion string
	// Capabilities are the claimed capabilities, in KnownCapabilities order.
	Capabilities []string
	// DeviceClassName and UUIDAttribute are those of the first device kind
	// that is neither partitioned nor shared.
	DeviceClassName string
	UUIDAttribute   string
	// PartitionClassName, ProfileAttribute and ParentUUIDAttribute are
	// those of the first kind with partitions; all empty without one (an
	// empty PartitionClassName skips the partition scenarios).
	PartitionClassName  string
	ProfileAttribute    string
	ParentUUIDAttribute string
	// MemoryCapacity is the partition kind's memoryCapacity, else the
	// whole-device kind's; empty when neither declares one.
	MemoryCapacity string
	// DeviceEnvPrefix is P when the whole-device kind's variable is
	// name "P{device}", value "{identity}" (the only convention the flags
	// can say); empty otherwise, which skips the kit's env scenarios.
	DeviceEnvPrefix string
	// DriverNamespace and DriverPodSelector are driver.pods'; empty without.
	DriverNamespace   string
	DriverPodSelector string
	// Hardware is true for HardwareReal: the kit skips @emulator scenarios.
	Hardware bool
	// Observers are the whole-device kind's observers.
	Observers []string
	// DeviceNodes and Mounts are the whole-device kind's deviceNodes and
	// mounts.
	DeviceNodes []DeviceNode
	Mounts      []Mount
	// DeviceEnvName and DeviceEnvValue are the whole-device kind's
	// identity.env patterns, when DeviceEnvPrefix cannot say them.
	DeviceEnvName, DeviceEnvValue string
	// PCIVendor and PCIClass are the whole-device kind's pci.
	PCIVendor, PCIClass string
	// SharedDeviceClassName, SharedIdentityAttribute and SharedCapacity
	// are those of the first shared kind (sharedCapacity); all empty
	// without one (the KEP-5075 scenarios then have no devices to share).
	SharedDeviceClassName, SharedIdentityAttribute, SharedCapacity string
	// PCIeRootPeerClasses are the whole-device kind's pcieRootPeers.
	PCIeRootPeerClasses []string
	// FaultResponses are the whole-device kind's faults, each as
	// "<fault>=<health>" or "<fault>=<health>/<taint effect>"
	// (FormatFaultResponse), and FaultCommand its faultCommand (nil
	// without).
	FaultResponses []string
	FaultCommand   *FaultCommand
	// TorusChipClassName, TorusSubsliceClassName and TorusShapeAttribute are the
	// torus section's; all empty without one (the @tpu-torus scenarios
	// skip).
	TorusChipClassName, TorusSubsliceClassName, TorusShapeAttribute string
	// CliqueAttribute and IMEXChannelClassName are fabric's; empty
	// without one.
	CliqueAttribute, IMEXChannelClassName string
	// BindingConditions, BindingFailureConditions and
	// BindingConditionsSetBy are the bindingConditions section's; all
	// empty without one.
	BindingConditions, BindingFailureConditions []string
	BindingConditionsSetBy                      string
	// NUMANodesAttribute is the whole-device kind's numaNodesAttribute.
	NUMANodesAttribute string
	// OpaqueConfig is the whole-device kind's opaqueConfig; nil without.
	OpaqueConfig *OpaqueConfig
	// DeviceKindNames are the kinds' names by their DeviceClass, for the
	// reports.
	DeviceKindNames map[string]string
	// Tags is scenarios.tags; empty without it.
	Tags string
}

// FormatFaultResponse writes a fault response as the kit's
// --fault-responses flag takes it: "48=Unhealthy/NoExecute" (Xid 48),
// "ecc-double=Unhealthy/NoExecute", "13=Healthy".
func FormatFaultResponse(f FaultResponse) string {
	s := fmt.Sprintf("%s=%s", f.Name(), f.Health)
	if f.Taint != "" {
		s += "/" + f.Taint
	}
	return s
}

// KitSettings returns the kit's flag values for a valid declaration.
func (d *Declaration) KitSettings() Settings {
	s := Settings{DriverName: d.Driver.Name, DriverVersion: d.Driver.Version, Hardware: d.Hardware == HardwareReal, DeviceKindNames: map[string]string{}}
	for _, k := range d.DeviceKinds {
		s.DeviceKindNames[k.DeviceClass] = k.Name
	}
	for _, c := range capabilities {
		if d.Claimed(c.Name) {
			s.Capabilities = append(s.Capabilities, string(c.Name))
		}
	}
	if p := d.Driver.Pods; p != nil {
		s.DriverNamespace, s.DriverPodSelector = p.Namespace, p.Selector
	}
	if f := d.Fabric; f != nil {
		s.CliqueAttribute, s.IMEXChannelClassName = f.CliqueAttribute, f.ChannelClass
	}
	kind := func(role string) *DeviceKind {
		if i := d.kindOfRole(role); i >= 0 {
			return &d.DeviceKinds[i]
		}
		return nil
	}
	whole, parts, shared := kind(RoleWhole), kind(RolePartitions), kind(RoleShared)
	if shared != nil {
		s.SharedDeviceClassName, s.SharedIdentityAttribute, s.SharedCapacity = shared.DeviceClass, shared.Identity.Attribute, shared.SharedCapacity
	}
	if whole != nil {
		s.DeviceClassName = whole.DeviceClass
		s.UUIDAttribute = whole.Identity.Attribute
		s.MemoryCapacity = whole.MemoryCapacity
		s.DeviceEnvPrefix = envPrefix(whole.Identity.Env)
		if env := whole.Identity.Env; env != nil && s.DeviceEnvPrefix == "" {
			s.DeviceEnvName, s.DeviceEnvValue = env.Name, env.Value
		}
		for _, o := range whole.Observers {
			s.Observers = append(s.Observers, string(o))
		}
		s.DeviceNodes, s.Mounts = slices.Clone(whole.DeviceNodes), slices.Clone(whole.Mounts)
		if whole.PCI != nil {
			s.PCIVendor, s.PCIClass = whole.PCI.Vendor, whole.PCI.Class
		}
		s.PCIeRootPeerClasses = slices.Clone(whole.PCIeRootPeers)
		s.NUMANodesAttribute = whole.NUMANodesAttribute
		s.OpaqueConfig = whole.OpaqueConfig
		for _, f := range whole.Faults {
			s.FaultResponses = append(s.FaultResponses, FormatFaultResponse(f))
		}
		s.FaultCommand = whole.FaultCommand
	}
	if b := d.BindingConditions; b != nil {
		s.BindingConditions, s.BindingFailureConditions = slices.Clone(b.Conditions), slices.Clone(b.FailureConditions)
		s.BindingConditionsSetBy = string(b.SetBy)
	}
	if sc := d.Scenarios; sc != nil {
		s.Tags = sc.Tags
	}
	if t := d.Torus; t != nil {
		s.TorusChipClassName, s.TorusSubsliceClassName, s.TorusShapeAttribute = t.ChipClass, t.SubsliceClass, t.ShapeAttribute
	}
	if parts != nil {
		s.PartitionClassName = parts.DeviceClass
		s.ProfileAttribute = parts.Partitions.ProfileAttribute
		s.ParentUUIDAttribute = parts.Partitions.ParentIdentityAttribute
		if parts.MemoryCapacity != "" {
			s.MemoryCapacity = parts.MemoryCapacity
		}
	}
	return s
}

// envPrefix is P of a variable named "P{device}" valued "{identity}", or "".
func envPrefix(env *EnvVariable) string {
	if env == nil || env.Value != PlaceholderIdentity {
		return ""
	}
	segs, err := parsePattern(env.Name)
	if err != nil || len(segs) != 2 || segs[0].placeholder != "" || segs[1].placeholder != PlaceholderDevice {
		return ""
	}
	return segs[0].literal
}
