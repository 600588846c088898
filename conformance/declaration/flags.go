package declaration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Flag is a command-line flag bound to one field of the declaration: the
// flag writes the field (Set), so a flag and a declaration file can never
// say two different things about one setting.
type Flag struct {
	// Name is the flag's name, without dashes.
	Name string
	// Path is the field the flag writes, as Set takes it.
	Path string
	// Usage says what the flag is for; FlagUsage adds the field.
	Usage string
	// Format makes the field's text from the flag's value, %s standing for
	// it ("%s{device}"); empty: the value as given.
	Format string
	// Switch makes the flag a boolean one that writes On when true and Off
	// when false.
	Switch  bool
	On, Off string
}

// Flags are the driver's settings that have a flag of their own, for a
// driver certified without a declaration file or one whose file a flag
// overrides. Every other field takes --set PATH=VALUE.
func Flags() []Flag {
	return []Flag{
		{Name: "driver", Path: "driver.name", Usage: "name of the DRA driver under test"},
		{Name: "driver-version", Path: "driver.version", Usage: "the driver's version for the report (default: the images of its pods)"},
		{Name: "driver-namespace", Path: "driver.pods.namespace", Usage: "namespace of the driver's pods, for diagnostics (empty: all namespaces)"},
		{Name: "driver-pod-selector", Path: "driver.pods.selector", Usage: "label selector of exactly the driver's pods, for their logs in diagnostics and the restart scenarios"},
		{Name: "capabilities", Path: "capabilities", Usage: "optional capabilities the driver claims, e.g. partitionableDevices,numaNodeAttribute (all of them, replacing the file's); scenarios of unclaimed ones are skipped, or fail when the driver's slices show them"},
		{Name: "hardware", Path: "hardware", Switch: true, On: string(HardwareReal), Off: string(HardwareEmulated), Usage: "the driver manages real devices, not drakit's emulator: @emulator scenarios are skipped, with that reason"},
		{Name: "device-class", Path: "deviceKinds[whole].deviceClass", Usage: "DeviceClass the kit's claims request (without a declaration file: default the driver's name)"},
		{Name: "uuid-attribute", Path: "deviceKinds[whole].identity.attribute", Usage: "string attribute whose value names one device, e.g. uuid (bare name in the driver's domain, or domain/name)"},
		{Name: "device-env-prefix", Path: "deviceKinds[whole].identity.env.name", Format: "%s{device}", Usage: "prefix P of the per-device environment variable P<DEVICE>=<identity> (the reference driver's convention)"},
		{Name: "device-env-name", Path: "deviceKinds[whole].identity.env.name", Usage: "per-device environment variable name as a pattern ({device}, {identity}, {attribute:NAME}), e.g. GPU_DEVICE_{attribute:index}"},
		{Name: "device-env-value", Path: "deviceKinds[whole].identity.env.value", Usage: "its value as a pattern (default {identity})"},
		{Name: "observers", Path: "deviceKinds[whole].observers", Usage: "the kit's ways of checking a container: cdi, env, deviceNodes, mounts, nvml (default cdi, and env with a per-device variable)"},
		{Name: "memory-capacity", Path: "deviceKinds[whole].memoryCapacity", Usage: "device capacity holding the memory size in bytes (empty: scenarios that select by memory are skipped)"},
		{Name: "pci-vendor", Path: "deviceKinds[whole].pci.vendor", Usage: "PCI vendor ID of the driver's devices, for the inventory lint rule (10de)"},
		{Name: "pci-class", Path: "deviceKinds[whole].pci.class", Usage: "PCI class code prefix of the driver's devices (0302)"},
		{Name: "pcie-root-peer-classes", Path: "deviceKinds[whole].pcieRootPeers", Usage: "DeviceClasses of other drivers whose devices share PCIe root complexes with the driver's (empty: the alignment scenarios are skipped)"},
		{Name: "numa-nodes-attribute", Path: "deviceKinds[whole].numaNodesAttribute", Usage: "int list attribute of the NUMA nodes close to a device, e.g. closeNUMANodes (KEP-5491)"},
		{Name: "fault-responses", Path: "deviceKinds[whole].faults", Usage: "hardware faults the kit may inject and the driver's answer, <fault>=<Healthy|Unhealthy>[/<NoSchedule|NoExecute|None>], e.g. 48=Unhealthy/NoExecute for an Xid (needs the file's faultCommand)"},
		{Name: "partition-class", Path: "deviceKinds[partitions].deviceClass", Usage: "DeviceClass of the driver's partitions (MIG devices, KEP-4815; needs the capability partitionableDevices)"},
		{Name: "profile-attribute", Path: "deviceKinds[partitions].partitions.profileAttribute", Usage: "string attribute naming a partition's profile, e.g. profile (1g.5gb)"},
		{Name: "parent-uuid-attribute", Path: "deviceKinds[partitions].partitions.parentIdentityAttribute", Usage: "string attribute of a partition holding its parent device's identity"},
		{Name: "shared-class", Path: "deviceKinds[shared].deviceClass", Usage: "DeviceClass of the driver's shared devices (allowMultipleAllocations, KEP-5075; needs the capability consumableCapacity)"},
		{Name: "shared-identity-attribute", Path: "deviceKinds[shared].identity.attribute", Usage: "string attribute whose value names one shared device"},
		{Name: "shared-capacity", Path: "deviceKinds[shared].sharedCapacity", Usage: "the consumable capacity claims share of a shared device, e.g. bandwidth"},
		{Name: "clique-attribute", Path: "fabric.cliqueAttribute", Usage: "attribute naming a GPU's NVLink clique, e.g. nvlinkClique (empty: the @nvlink-fabric scenarios are skipped)"},
		{Name: "imex-channel-class", Path: "fabric.channelClass", Usage: "DeviceClass of the driver's IMEX channels (empty: the IMEX channel scenarios are skipped)"},
	}
}

// FlagUsage is f's help text: its usage and the field it writes.
func FlagUsage(f Flag) string {
	return fmt.Sprintf("%s (declaration %s)", f.Usage, f.Path)
}

// SetFlag is the flag that writes any field: --set PATH=VALUE.
const SetFlag = "set"

// SetFlagUsage is --set's help text.
const SetFlagUsage = "write one field of the driver declaration, PATH=VALUE, e.g. deviceKinds[whole].mounts[0].path=/run/{device} " +
	"or deviceKinds[whole].opaqueConfig.parameters={...} in JSON (repeatable, after the file and the flags above; lists comma-separated; " +
	"deviceKinds takes an index or a role: whole, partitions, shared)"

// Overrides collects the values of the driver flags (Flags and --set), in
// the order given, for the declaration they describe (Declaration).
type Overrides struct {
	// Prefix starts the flags' names in errors ("drakit." for a Go test's
	// flags).
	Prefix string
	writes []write
}

type write struct {
	flag, path, value string
}

// FlagValue is a flag's value, for the standard library's flag package
// and for pflag (which also takes a Type).
type FlagValue interface {
	String() string
	Set(string) error
	Type() string
	IsBoolFlag() bool
}

// Value is the value of flag f, recording what it writes.
func (o *Overrides) Value(f Flag) FlagValue { return &flagValue{o: o, f: f} }

// SetValue is the value of --set.
func (o *Overrides) SetValue() FlagValue { return &setValue{o: o} }

type flagValue struct {
	o   *Overrides
	f   Flag
	val string
}

func (v *flagValue) String() string { return v.val }

func (v *flagValue) Type() string {
	if v.f.Switch {
		return "bool"
	}
	return "string"
}

func (v *flagValue) IsBoolFlag() bool { return v.f.Switch }

func (v *flagValue) Set(s string) error {
	text := s
	switch {
	case v.f.Switch:
		on, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		text = v.f.Off
		if on {
			text = v.f.On
		}
	case v.f.Format != "" && s != "":
		text = fmt.Sprintf(v.f.Format, s)
	}
	v.val = s
	v.o.writes = append(v.o.writes, write{flag: v.f.Name, path: v.f.Path, value: text})
	return nil
}

type setValue struct {
	o    *Overrides
	sets []string
}

func (v *setValue) String() string   { return strings.Join(v.sets, " ") }
func (v *setValue) Type() string     { return "PATH=VALUE" }
func (v *setValue) IsBoolFlag() bool { return false }

func (v *setValue) Set(s string) error {
	path, value, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q: want PATH=VALUE, e.g. driver.version=v1.2.0", s)
	}
	if _, err := parseFieldPath(path); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	v.sets = append(v.sets, s)
	v.o.writes = append(v.o.writes, write{flag: SetFlag, path: path, value: value})
	return nil
}

// Declaration is the driver declaration the file (none: "") and the flags
// describe, defaulted and validated: the file's, with each flag's value
// written over it in the order given. Without a file it is built from the
// flags alone: emulated hardware, a kind of whole devices named devices
// whose deviceClass defaults to the driver's name, and partitions known by
// the whole devices' identity attribute unless said otherwise. Errors name
// the file and line, or the flag, of each problem.
func (o *Overrides) Declaration(file string) (*Declaration, error) {
	var d *Declaration
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read driver declaration %s: %w", file, err)
		}
		if d, err = decode(data, file); err != nil {
			return nil, err
		}
	} else {
		d = &Declaration{APIVersion: APIVersion, Kind: Kind, Hardware: HardwareEmulated, source: "the driver flags"}
		d.DeviceKinds = []DeviceKind{{Name: roleKindNames[RoleWhole]}}
	}
	d.flags = map[string]string{}
	for _, w := range o.writes {
		if err := d.Set(w.path, w.value); err != nil {
			return nil, fmt.Errorf("--%s%s: %w: %w", o.Prefix, w.flag, ErrInvalid, err)
		}
		if at, ok := d.Resolve(w.path); ok {
			d.flags[at] = o.Prefix + w.flag
		}
	}
	if file == "" {
		d.defaultFromFlags()
		for _, f := range Flags() { // the flags say everything: name the one that would fix a field
			if at, ok := d.Resolve(f.Path); ok && d.flags[at] == "" {
				d.flags[at] = o.Prefix + f.Name
			}
		}
	}
	d.Default()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// defaultFromFlags fills what a declaration built from flags alone leaves
// to the kit's conventions.
func (d *Declaration) defaultFromFlags() {
	whole := d.kindOfRole(RoleWhole)
	if whole < 0 {
		return
	}
	if k := &d.DeviceKinds[whole]; k.DeviceClass == "" {
		k.DeviceClass = d.Driver.Name
	}
	if p := d.kindOfRole(RolePartitions); p >= 0 {
		k := &d.DeviceKinds[p]
		if k.Identity.Attribute == "" {
			k.Identity.Attribute = d.DeviceKinds[whole].Identity.Attribute
		}
		if k.Partitions.ParentKind == "" {
			k.Partitions.ParentKind = d.DeviceKinds[whole].Name
		}
	}
}
