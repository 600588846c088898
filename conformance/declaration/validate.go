package declaration

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of resource.k8s.io names (the API's validation), and of
// driver.version, bounded like a version attribute's value.
const (
	maxDriverNameLength      = 63
	maxAttributeDomainLength = 63
	maxAttributeIDLength     = 32
	maxVersionLength         = 64
)

var (
	cIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pciVendor   = regexp.MustCompile(`^[0-9a-f]{4}$`)
	pciClass    = regexp.MustCompile(`^([0-9a-f]{2}){1,3}$`)
)

// Validate checks a defaulted declaration (call Default first; Parse and
// Load do both) and returns nil or a *ValidationError listing every
// problem with its field path, and its line for a parsed declaration.
// Every error matches errors.Is(err, ErrInvalid). Validate does not change
// the declaration and gives the same answer every time.
func (d *Declaration) Validate() error {
	return d.problems(d.validate())
}

func (d *Declaration) validate() field.ErrorList {
	var errs field.ErrorList
	if d.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), d.APIVersion, []string{APIVersion}))
	}
	if d.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), d.Kind, []string{Kind}))
	}
	errs = append(errs, validateDriver(field.NewPath("driver"), &d.Driver)...)
	errs = append(errs, d.validateDeviceKinds(field.NewPath("deviceKinds"))...)
	errs = append(errs, d.validateCapabilities(field.NewPath("capabilities"))...)
	errs = append(errs, d.validateTorus(field.NewPath("torus"))...)
	errs = append(errs, d.validateBindingConditions(field.NewPath("bindingConditions"))...)
	if f := d.Fabric; f != nil {
		fp := field.NewPath("fabric")
		if f.CliqueAttribute == "" {
			errs = append(errs, field.Required(fp.Child("cliqueAttribute"), "the attribute naming a GPU's NVLink clique, e.g. nvlinkClique"))
		} else {
			errs = append(errs, qualifiedName(fp.Child("cliqueAttribute"), f.CliqueAttribute)...)
		}
		if f.ChannelClass != "" {
			errs = append(errs, dnsSubdomain(fp.Child("channelClass"), f.ChannelClass)...)
		}
	}
	if sc := d.Scenarios; sc != nil {
		tp := field.NewPath("scenarios", "tags")
		if strings.TrimSpace(sc.Tags) == "" {
			errs = append(errs, field.Required(tp, `a godog tag filter, e.g. "@kep-4381 && ~@interpose"`))
		} else if err := ValidateTagFilter(sc.Tags); err != nil {
			errs = append(errs, field.Invalid(tp, sc.Tags, err.Error()))
		}
	}
	switch hp := field.NewPath("hardware"); d.Hardware {
	case HardwareEmulated, HardwareReal:
	case "":
		errs = append(errs, field.Required(hp, `"emulated" (drakit's emulator) or "real"`))
	default:
		errs = append(errs, field.NotSupported(hp, d.Hardware, []Hardware{HardwareEmulated, HardwareReal}))
	}
	return errs
}

func validateDriver(path *field.Path, drv *Driver) field.ErrorList {
	var errs field.ErrorList
	np := path.Child("name")
	switch {
	case drv.Name == "":
		errs = append(errs, field.Required(np, "the DRA driver name, as in ResourceSlice spec.driver"))
	case len(drv.Name) > maxDriverNameLength:
		errs = append(errs, field.TooLong(np, drv.Name, maxDriverNameLength))
	default:
		errs = append(errs, dnsSubdomain(np, drv.Name)...)
	}
	if v := drv.Version; v != "" {
		vp := path.Child("version")
		if len(v) > maxVersionLength {
			errs = append(errs, field.TooLong(vp, v, maxVersionLength))
		} else if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			errs = append(errs, field.Invalid(vp, v, "must be printable without spaces, e.g. v0.1.0"))
		}
	}
	if drv.Pods != nil {
		pp := path.Child("pods")
		if ns := drv.Pods.Namespace; ns != "" {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(pp.Child("namespace"), ns, msg))
			}
		}
		sp := pp.Child("selector")
		if drv.Pods.Selector == "" {
			errs = append(errs, field.Required(sp, "a label selector of exactly the driver's pods, e.g. app.kubernetes.io/name=my-driver"))
		} else if sel, err := labels.Parse(drv.Pods.Selector); err != nil {
			errs = append(errs, field.Invalid(sp, drv.Pods.Selector, err.Error()))
		} else if sel.Empty() {
			errs = append(errs, field.Invalid(sp, drv.Pods.Selector, "selects every pod; select exactly the driver's pods"))
		}
	}
	return errs
}

func (d *Declaration) validateDeviceKinds(path *field.Path) field.ErrorList {
	if len(d.DeviceKinds) == 0 {
		return field.ErrorList{field.Required(path, "at least one device kind, with the DeviceClass the kit's claims use")}
	}
	var errs field.ErrorList
	kindNames := map[string]*field.Path{}
	classNames := map[string]*field.Path{}
	whole := 0
	for i := range d.DeviceKinds {
		k := &d.DeviceKinds[i]
		kp := path.Index(i)
		np, cp := kp.Child("name"), kp.Child("deviceClass")
		if k.Name == "" {
			errs = append(errs, field.Required(np, "a DNS label naming the kind in reports, e.g. gpu"))
		} else {
			for _, msg := range validation.IsDNS1123Label(k.Name) {
				errs = append(errs, field.Invalid(np, k.Name, msg))
			}
			errs = append(errs, unique(np, k.Name, kindNames)...)
		}
		if k.DeviceClass == "" {
			errs = append(errs, field.Required(cp, "the DeviceClass selecting exactly the devices of this kind"))
		} else {
			errs = append(errs, dnsSubdomain(cp, k.DeviceClass)...)
			errs = append(errs, unique(cp, k.DeviceClass, classNames)...)
		}
		errs = append(errs, validateIdentity(kp.Child("identity"), &k.Identity)...)
		if k.PCI != nil {
			if !pciVendor.MatchString(k.PCI.Vendor) {
				errs = append(errs, field.Invalid(kp.Child("pci", "vendor"), k.PCI.Vendor, "must be a PCI vendor ID of four lower-case hex digits, e.g. 10de"))
			}
			if !pciClass.MatchString(k.PCI.Class) {
				errs = append(errs, field.Invalid(kp.Child("pci", "class"), k.PCI.Class, "must be two, four or six lower-case hex digits of a PCI class code, e.g. 0302"))
			}
		}
		if k.MemoryCapacity != "" {
			errs = append(errs, qualifiedName(kp.Child("memoryCapacity"), k.MemoryCapacity)...)
		}
		if k.OpaqueConfig != nil {
			errs = append(errs, validateOpaqueConfig(kp.Child("opaqueConfig"), k.OpaqueConfig)...)
		}
		if k.SharedCapacity != "" {
			sp := kp.Child("sharedCapacity")
			errs = append(errs, qualifiedName(sp, k.SharedCapacity)...)
			if k.Partitions != nil {
				errs = append(errs, field.Invalid(sp, k.SharedCapacity, "a kind of partitions cannot be shared: declare the shared devices as a kind of their own"))
			}
			if !d.Capabilities[CapabilityConsumableCapacity] {
				errs = append(errs, field.Invalid(sp, k.SharedCapacity, fmt.Sprintf("a shared kind needs the capability %s claimed", mustCapability(CapabilityConsumableCapacity))))
			}
		}
		if k.NUMANodesAttribute != "" {
			np := kp.Child("numaNodesAttribute")
			errs = append(errs, qualifiedName(np, k.NUMANodesAttribute)...)
			if !d.Capabilities[CapabilityListTypeAttributes] {
				errs = append(errs, field.Invalid(np, k.NUMANodesAttribute, fmt.Sprintf("a list attribute needs the capability %s claimed", mustCapability(CapabilityListTypeAttributes))))
			}
		}
		for j, peer := range k.PCIeRootPeers {
			pp := kp.Child("pcieRootPeers").Index(j)
			errs = append(errs, dnsSubdomain(pp, peer)...)
			if d.kindClassIndex(peer) >= 0 {
				errs = append(errs, field.Invalid(pp, peer, "is the DeviceClass of one of this driver's kinds: peers are other drivers' classes"))
			}
		}
		errs = append(errs, validateFaults(kp.Child("faults"), k.Faults)...)
		switch fp := kp.Child("faultCommand"); {
		case len(k.Faults) > 0 && k.FaultCommand == nil:
			errs = append(errs, field.Required(fp, `the command the kit injects the faults with and ends them, e.g. {inject: [drakit, emulator, fault, xid, --device, "{identity}", --code, "{fault}"], reset: [drakit, emulator, fault, reset, --device, "{identity}"]}`))
		case k.FaultCommand != nil && len(k.Faults) == 0:
			errs = append(errs, field.Forbidden(fp, "only with faults: the faults it injects"))
		case k.FaultCommand != nil:
			errs = append(errs, validateFaultCommand(fp, k.FaultCommand, len(k.Faults))...)
		}
		switch {
		case k.Partitions != nil:
			errs = append(errs, d.validatePartitions(kp.Child("partitions"), i)...)
		case k.SharedCapacity == "":
			whole++
		}
		errs = append(errs, validateObservers(kp, k)...)
	}
	if whole == 0 {
		errs = append(errs, field.Required(path, "a device kind without partitions that is not shared: the kit's core scenarios claim whole devices"))
	}
	return errs
}

func validateOpaqueConfig(path *field.Path, c *OpaqueConfig) field.ErrorList {
	var errs field.ErrorList
	pp := path.Child("parameters")
	var params map[string]any
	switch {
	case len(c.Parameters) == 0:
		errs = append(errs, field.Required(pp, "the sample's parameters as the driver decodes them, e.g. {apiVersion: gpu.example.com/v1, kind: GpuConfig, ...}"))
	case json.Unmarshal(c.Parameters, &params) != nil || len(params) == 0:
		errs = append(errs, field.Invalid(pp, string(c.Parameters), "must be a non-empty object"))
	}
	ep := path.Child("env")
	if len(c.Env) == 0 {
		errs = append(errs, field.Required(ep, "at least one variable a container shows when its devices got the sample: the effect the kit checks"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		if err := c.validateEnv(name); err != nil {
			errs = append(errs, field.Invalid(ep.Key(name), name, err.Error()))
		}
	}
	return errs
}

// validateEnv checks one variable of the effect: a plain name, or a
// pattern of one per device, and a value that is text or a pattern.
func (c *OpaqueConfig) validateEnv(name string) error {
	if strings.ContainsRune(name, '{') {
		if err := validateEnvName(name); err != nil {
			return err
		}
	} else if !cIdentifier.MatchString(name) {
		return errors.New("must be an environment variable name: letters, digits and _, not starting with a digit")
	}
	value := c.Env[name]
	if _, err := parsePattern(value); err != nil {
		return fmt.Errorf("value %q: %w", value, err)
	}
	if strings.ContainsRune(value, 0) {
		return errors.New("an environment variable cannot hold a NUL character")
	}
	return nil
}

// unique reports value when an earlier field (in seen) has it, and
// records it otherwise.
func unique[V comparable](fp *field.Path, value V, seen map[V]*field.Path) field.ErrorList {
	if first, dup := seen[value]; dup {
		e := field.Duplicate(fp, value)
		e.Detail = "also " + first.String()
		return field.ErrorList{e}
	}
	seen[value] = fp
	return nil
}

func validateIdentity(path *field.Path, id *Identity) field.ErrorList {
	var errs field.ErrorList
	if id.Attribute == "" {
		errs = append(errs, field.Required(path.Child("attribute"), "the string attribute whose value names one device, e.g. uuid"))
	} else {
		errs = append(errs, qualifiedName(path.Child("attribute"), id.Attribute)...)
	}
	if id.Env != nil {
		ep := path.Child("env")
		if id.Env.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), "a pattern such as MY_DEVICE_{device}"))
		} else if err := validateEnvName(id.Env.Name); err != nil {
			errs = append(errs, field.Invalid(ep.Child("name"), id.Env.Name, err.Error()))
		}
		if id.Env.Value == "" {
			errs = append(errs, field.Required(ep.Child("value"), "defaults to "+DefaultEnvValue))
		} else if err := validateEnvValue(id.Env.Value); err != nil {
			errs = append(errs, field.Invalid(ep.Child("value"), id.Env.Value, err.Error()))
		}
	}
	return errs
}

func (d *Declaration) validatePartitions(path *field.Path, self int) field.ErrorList {
	var errs field.ErrorList
	p := d.DeviceKinds[self].Partitions
	if !d.Capabilities[CapabilityPartitionableDevices] {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("partitions need the capability %s claimed", mustCapability(CapabilityPartitionableDevices))))
	}
	pk := path.Child("parentKind")
	switch parent := d.kindIndex(p.ParentKind); {
	case p.ParentKind == "":
		errs = append(errs, field.Required(pk, "the kind of the partitioned devices; defaults to the only kind without partitions"))
	case parent < 0:
		errs = append(errs, field.NotFound(pk, p.ParentKind))
	case parent == self:
		errs = append(errs, field.Invalid(pk, p.ParentKind, "a kind cannot partition itself"))
	case d.DeviceKinds[parent].Partitions != nil:
		errs = append(errs, field.Invalid(pk, p.ParentKind, "names a kind of partitions; partitions are of whole devices"))
	}
	for _, a := range []struct{ name, value, example string }{
		{"profileAttribute", p.ProfileAttribute, "profile"},
		{"parentIdentityAttribute", p.ParentIdentityAttribute, "parentUUID"},
	} {
		if a.value == "" {
			errs = append(errs, field.Required(path.Child(a.name), "a string attribute, e.g. "+a.example))
		} else {
			errs = append(errs, qualifiedName(path.Child(a.name), a.value)...)
		}
	}
	return errs
}

// kindClassIndex is the index of the kind whose DeviceClass is class, or -1.
func (d *Declaration) kindClassIndex(class string) int {
	return slices.IndexFunc(d.DeviceKinds, func(k DeviceKind) bool { return k.DeviceClass == class })
}

// kindIndex returns the index of the device kind called name, or -1.
func (d *Declaration) kindIndex(name string) int {
	return slices.IndexFunc(d.DeviceKinds, func(k DeviceKind) bool { return k.Name == name })
}

func validateObservers(path *field.Path, k *DeviceKind) field.ErrorList {
	var errs field.ErrorList
	op := path.Child("observers")
	seen := map[Observer]*field.Path{}
	for i, o := range k.Observers {
		if !slices.Contains(knownObservers, o) {
			errs = append(errs, field.NotSupported(op.Index(i), o, knownObservers))
			continue
		}
		errs = append(errs, unique(op.Index(i), o, seen)...)
	}
	if len(k.Observers) == 0 {
		errs = append(errs, field.Required(op, "defaults to cdi, and env with identity.env"))
	}
	_, observesEnv := seen[ObserverEnv]
	switch {
	case observesEnv && k.Identity.Env == nil:
		errs = append(errs, field.Required(path.Child("identity", "env"), "the env observer checks the variable declared here"))
	case !observesEnv && k.Identity.Env != nil:
		errs = append(errs, field.Invalid(op, k.Observers, "identity.env is declared, so list the env observer (or remove identity.env)"))
	}
	_, observesNodes := seen[ObserverDeviceNodes]
	errs = append(errs, validateInjected(path.Child("deviceNodes"), op, k.Observers, observesNodes, ObserverDeviceNodes, k.DeviceNodes,
		"the device nodes a container gets per device, e.g. {path: \"/dev/mydev{attribute:index}\"}")...)
	_, observesMounts := seen[ObserverMounts]
	errs = append(errs, validateInjected(path.Child("mounts"), op, k.Observers, observesMounts, ObserverMounts, k.Mounts,
		"the mounts a container gets per device, e.g. {path: \"/var/run/mydev/{device}\", readOnly: true}")...)
	return errs
}

// injected is a declared device node or mount.
type injected interface {
	Validate() error
	comparablePath() string
}

func (n DeviceNode) comparablePath() string { return n.Path }
func (m Mount) comparablePath() string      { return m.Path }

// validateInjected checks a kind's deviceNodes or mounts: listed exactly
// when their observer is, each valid, no path twice.
func validateInjected[T injected](path, op *field.Path, observers []Observer, observed bool, o Observer, items []T, example string) field.ErrorList {
	var errs field.ErrorList
	switch {
	case observed && len(items) == 0:
		errs = append(errs, field.Required(path, fmt.Sprintf("the %s observer checks %s", o, example)))
	case !observed && len(items) > 0:
		errs = append(errs, field.Invalid(op, observers, fmt.Sprintf("%s is declared, so list the %s observer (or remove %s)", path, o, path)))
	}
	seen := map[string]*field.Path{}
	for i, item := range items {
		ip := path.Index(i)
		if err := item.Validate(); err != nil {
			errs = append(errs, field.Invalid(ip, item, err.Error()))
		}
		errs = append(errs, unique(ip.Child("path"), item.comparablePath(), seen)...)
	}
	return errs
}

func (d *Declaration) validateCapabilities(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]CapabilityName, 0, len(d.Capabilities))
	for name := range d.Capabilities {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cp := path.Key(string(name))
		c, known := LookupCapability(name)
		if !known {
			errs = append(errs, field.NotSupported(cp, name, capabilityNames()))
			continue
		}
		if !d.Capabilities[name] {
			continue
		}
		for _, req := range c.Requires {
			if !d.Capabilities[req] {
				errs = append(errs, field.Invalid(cp, true, fmt.Sprintf("%s requires the capability %s claimed too", c, mustCapability(req))))
			}
		}
	}
	if d.Capabilities[CapabilityConsumableCapacity] && !slices.ContainsFunc(d.DeviceKinds, func(k DeviceKind) bool { return k.SharedCapacity != "" }) {
		errs = append(errs, field.Invalid(path.Key(string(CapabilityConsumableCapacity)), true,
			"claimed, but no device kind declares a sharedCapacity: the kit needs the shared devices' DeviceClass and capacity to check them"))
	}
	if d.Capabilities[CapabilityPartitionableDevices] && !slices.ContainsFunc(d.DeviceKinds, func(k DeviceKind) bool { return k.Partitions != nil }) {
		errs = append(errs, field.Invalid(path.Key(string(CapabilityPartitionableDevices)), true,
			"claimed, but no device kind declares partitions: the kit needs their DeviceClass and attributes to check them"))
	}
	return errs
}

// validateTorus checks the torus section: the chip class is a declared
// kind's, the sub-slice class is a DNS subdomain of no kind, the shape
// attribute a QualifiedName.
func (d *Declaration) validateTorus(path *field.Path) field.ErrorList {
	t := d.Torus
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	cp, sp, ap := path.Child("chipClass"), path.Child("subsliceClass"), path.Child("shapeAttribute")
	switch {
	case t.ChipClass == "":
		errs = append(errs, field.Required(cp, "the DeviceClass of a node's chips, one of deviceKinds[*].deviceClass"))
	case d.kindClassIndex(t.ChipClass) < 0:
		errs = append(errs, field.NotFound(cp, t.ChipClass))
	}
	switch {
	case t.SubsliceClass == "":
		errs = append(errs, field.Required(sp, "the DeviceClass of the multi-host sub-slices"))
	case d.kindClassIndex(t.SubsliceClass) >= 0:
		errs = append(errs, field.Invalid(sp, t.SubsliceClass, "is a device kind's class; sub-slices have a class of their own"))
	default:
		errs = append(errs, dnsSubdomain(sp, t.SubsliceClass)...)
	}
	if t.ShapeAttribute == "" {
		errs = append(errs, field.Required(ap, `the sub-slices' string attribute naming their shape, e.g. "shape"`))
	} else {
		errs = append(errs, qualifiedName(ap, t.ShapeAttribute)...)
	}
	return errs
}

// mustCapability returns the capability one of the Capability… constants
// names.
func mustCapability(name CapabilityName) Capability {
	c, _ := LookupCapability(name)
	return c
}

func dnsSubdomain(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func qualifiedName(path *field.Path, name string) field.ErrorList {
	if err := validateQualifiedName(name); err != nil {
		return field.ErrorList{field.Invalid(path, name, err.Error())}
	}
	return nil
}

// validateQualifiedName accepts a device attribute or capacity name as
// resource.k8s.io spells it (QualifiedName): a C identifier of at most 32
// characters in the driver's domain, or a DNS subdomain of at most 63
// characters, "/" and such an identifier.
func validateQualifiedName(name string) error {
	domain, id, qualified := strings.Cut(name, "/")
	if !qualified {
		id, domain = domain, ""
	}
	if !cIdentifier.MatchString(id) || len(id) > maxAttributeIDLength {
		return fmt.Errorf("the name part must be a C identifier of at most %d characters", maxAttributeIDLength)
	}
	if qualified {
		if msgs := validation.IsDNS1123Subdomain(domain); len(msgs) > 0 || len(domain) > maxAttributeDomainLength {
			return fmt.Errorf("the domain part must be a DNS subdomain of at most %d characters", maxAttributeDomainLength)
		}
	}
	return nil
}

// validateFaults checks a kind's fault responses: each fault named once,
// by fault or by xid, a known health, a known taint effect.
func validateFaults(path *field.Path, faults []FaultResponse) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]*field.Path{}
	for i, f := range faults {
		fp := path.Index(i)
		switch {
		case f.Fault != "" && f.Xid != 0:
			errs = append(errs, field.Invalid(fp.Child("xid"), f.Xid, "fault and xid name the same thing: give one"))
		case f.Fault == "" && f.Xid == 0:
			errs = append(errs, field.Required(fp.Child("fault"), "the fault as the fault command takes it, e.g. ecc-double; or xid, an NVIDIA Xid error such as 48"))
		case f.Fault != "":
			bad := validateFaultName(fp.Child("fault"), f.Fault)
			if len(bad) == 0 {
				bad = unique(fp.Child("fault"), f.Name(), seen)
			}
			errs = append(errs, bad...)
		default:
			errs = append(errs, unique(fp.Child("xid"), f.Name(), seen)...)
		}
		switch f.Health {
		case FaultHealthy, FaultUnhealthy:
		case "":
			errs = append(errs, field.Required(fp.Child("health"), "the health the driver reports during the fault: Healthy or Unhealthy"))
		default:
			errs = append(errs, field.NotSupported(fp.Child("health"), f.Health, []string{FaultHealthy, FaultUnhealthy}))
		}
		if f.Taint != "" && !slices.Contains(FaultTaintEffects, f.Taint) {
			errs = append(errs, field.NotSupported(fp.Child("taint"), f.Taint, FaultTaintEffects))
		}
	}
	return errs
}

// ValidateTagFilter checks the godog tag filter syntax, whose parser panics on
// empty terms.
func ValidateTagFilter(filter string) error {
	if strings.TrimSpace(filter) == "" {
		return nil
	}
	for _, alt := range strings.Split(filter, ",") {
		for _, term := range strings.Split(alt, "&&") {
			t := strings.TrimSpace(term)
			t = strings.TrimPrefix(t, "~")
			t = strings.TrimPrefix(t, "@")
			if t == "" {
				return fmt.Errorf("%q has an empty term; write terms like @kep-4381, joined by \"&&\" or \",\"", filter)
			}
			if strings.ContainsAny(t, " \t@~") {
				return fmt.Errorf("%q: term %q is not a tag", filter, strings.TrimSpace(term))
			}
		}
	}
	return nil
}
