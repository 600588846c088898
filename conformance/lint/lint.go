package lint

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// Finding is one broken rule, or a warning: a part of a rule that no KEP
// or API requires, which the kit reports as advice and never counts in the
// verdict.
type Finding struct {
	Rule string
	// Basis is what the rule, or the part of it that found this, enforces:
	// a KEP, an API field's documented meaning, what the scheduler or the
	// kubelet does, or the driver's declaration. A warning's says that it
	// has none, and why the kit advises it anyway.
	Basis   string
	Warning bool
	Pool    string
	Slice   string
	Device  string
	// Message says what is wrong, in a sentence.
	Message string
}

// String cites the rule and its basis and names the pool, slice and
// device: "rule pools (KEP-4381: …): pool p, ResourceSlice s, device d:
// message".
func (f Finding) String() string {
	var where []string
	if f.Pool != "" {
		where = append(where, "pool "+f.Pool)
	}
	if f.Slice != "" {
		where = append(where, "ResourceSlice "+f.Slice)
	}
	if f.Device != "" {
		where = append(where, "device "+f.Device)
	}
	rule := fmt.Sprintf("rule %s (%s)", f.Rule, f.Basis)
	if len(where) == 0 {
		return fmt.Sprintf("%s: %s", rule, f.Message)
	}
	return fmt.Sprintf("%s: %s: %s", rule, strings.Join(where, ", "), f.Message)
}

// The bases of the rules and of their parts (doc.go tabulates them).
// Those starting with NoBasis make warnings.
const (
	basisPoolComplete = "KEP-4381: spec.pool.resourceSliceCount is the number of slices of the pool at its generation, and the scheduler allocates only from a pool whose slices it all sees"
	basisPoolDevices  = "KEP-4381: a device name is unique in its pool; the scheduler treats a pool with a duplicate as invalid"
	basisPoolNodes    = "KEP-4381: spec.nodeName, nodeSelector and allNodes say where the pool's devices are, and the scheduler counts a pool's slices per node: a pool whose slices select different nodes is incomplete on some"
	basisStandard     = "KEP-4381, KEP-6072: resource.kubernetes.io/pcieRoot, pciBusID and numaNode have the types and formats of k8s.io/dynamic-resource-allocation/deviceattribute"
	basisIdentity     = "the declaration: its uuidAttribute names one device, and the kit selects devices by it"
	basisNodeExists   = "KEP-4381: spec.nodeName names the node the pool's devices are on"
	basisCounterSets  = "KEP-4815: a device that consumes a counter set or counter its pool does not declare makes the pool invalid"
	basisCounterFit   = "KEP-4815: the scheduler allocates a device only while its pool's counters hold what it consumes"
	basisInventory    = "the declaration's PCI vendor and class, and the node's sysfs: resource.kubernetes.io/pciBusID and pcieRoot (KEP-4381, deviceattribute) name the device's PCI function and its root complex"
	basisNUMANode     = "KEP-6072: resource.kubernetes.io/numaNode is the sysfs numa_node of the device's PCI function, omitted where that is -1 (a list starts with it, KEP-5491)"
	basisPCIeDomain   = "KEP-6072, deviceattribute: resource.kubernetes.io/pcieRoot is pci<domain>:<bus> of the device's PCI function"

	// NoBasis starts the basis of a warning.
	NoBasis               = "no KEP or API basis, a warning"
	noBasisOwner          = NoBasis + ": the kubelet plugin library gives a driver's slices one owner"
	noBasisStandardName   = NoBasis + ": the API lets any domain name an attribute, but Kubernetes defines only pcieRoot, pciBusID and numaNode in resource.kubernetes.io"
	noBasisQualifiedNames = NoBasis + ": the API lets a third party's domain name an attribute, but another driver's names may mean something else there"
	noBasisNodeOwner      = NoBasis + ": the kubelet plugin library makes the Node the owner, so that its slices go with it"
)

// Input is what the rules judge.
type Input struct {
	// Driver is the driver's name; Slices are its ResourceSlices.
	Driver string
	Slices []resourceapi.ResourceSlice
	// Nodes are the cluster's Nodes (node-selection).
	Nodes []corev1.Node
	// Identity is the attribute that names one device (a bare name in the
	// driver's domain or domain/name); empty skips the identity rule.
	Identity string
	// OtherDrivers' slices (identity: values must be unique in the
	// cluster, qualified-names: their domains are theirs).
	OtherDrivers []string
}

// The rule names.
const (
	RulePools              = "pools"
	RuleStandardAttributes = "standard-attributes"
	RuleQualifiedNames     = "qualified-names"
	RuleIdentity           = "identity"
	RuleNodeSelection      = "node-selection"
	RuleCounters           = "counters"
	RuleInventory          = "inventory"
)

// Rules are the rules that judge an Input, by name; inventory and
// numa-node need the node's sysfs and are Inventory and NUMANode.
var Rules = map[string]func(Input) []Finding{
	RulePools:              Pools,
	RuleStandardAttributes: StandardAttributes,
	RuleQualifiedNames:     QualifiedNames,
	RuleIdentity:           Identity,
	RuleNodeSelection:      NodeSelection,
	RuleCounters:           Counters,
}

// RuleNames are the rules' names, sorted, inventory and numa-node included.
func RuleNames() []string {
	names := []string{RuleInventory, RuleNUMANode}
	for n := range Rules {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// The standard attributes (dra-1.37-spec.md: resource.kubernetes.io/).
const (
	standardDomain = "resource.kubernetes.io"
	attrPCIeRoot   = standardDomain + "/pcieRoot"
	attrPCIBusID   = standardDomain + "/pciBusID"
	attrNUMANode   = standardDomain + "/numaNode"
)

var (
	pcieRootRe = regexp.MustCompile(`^pci[0-9a-f]{4}:[0-9a-f]{2}$`)
	pciBusIDRe = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// pool is the newest generation of one pool's slices.
type pool struct {
	name   string
	slices []*resourceapi.ResourceSlice
}

// pools groups the driver's slices by pool, keeping the newest generation,
// sorted by name.
func pools(in Input) []pool {
	by := map[string][]*resourceapi.ResourceSlice{}
	for i := range in.Slices {
		s := &in.Slices[i]
		if s.Spec.Driver != in.Driver {
			continue
		}
		by[s.Spec.Pool.Name] = append(by[s.Spec.Pool.Name], s)
	}
	var out []pool
	for name, sl := range by {
		newest := int64(0)
		for _, s := range sl {
			newest = max(newest, s.Spec.Pool.Generation)
		}
		p := pool{name: name}
		for _, s := range sl {
			if s.Spec.Pool.Generation == newest {
				p.slices = append(p.slices, s)
			}
		}
		sort.Slice(p.slices, func(i, j int) bool { return p.slices[i].Name < p.slices[j].Name })
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Pools checks each pool: complete at its newest generation, one
// resourceSliceCount, unique device names and one node selection; a pool
// of several owners is a warning.
func Pools(in Input) []Finding {
	var out []Finding
	for _, p := range pools(in) {
		first := p.slices[0]
		count := first.Spec.Pool.ResourceSliceCount
		for _, s := range p.slices[1:] {
			if s.Spec.Pool.ResourceSliceCount != count {
				out = append(out, newFinding(RulePools, basisPoolComplete, p.name, s.Name, "", fmt.Sprintf("resourceSliceCount is %d, ResourceSlice %s of the same generation says %d",
					s.Spec.Pool.ResourceSliceCount, first.Name, count)))
			}
		}
		if int64(len(p.slices)) != count {
			out = append(out, newFinding(RulePools, basisPoolComplete, p.name, "", "", fmt.Sprintf("generation %d has %d slices, its resourceSliceCount is %d: the pool is incomplete, the scheduler allocates nothing from it",
				first.Spec.Pool.Generation, len(p.slices), count)))
		}
		seen := map[string]string{}
		for _, s := range p.slices {
			for _, d := range s.Spec.Devices {
				if other, dup := seen[d.Name]; dup {
					out = append(out, newFinding(RulePools, basisPoolDevices, p.name, s.Name, d.Name, fmt.Sprintf("the device name is also in ResourceSlice %s of the pool", other)))
					continue
				}
				seen[d.Name] = s.Name
			}
			if owner, want := ownerOf(s), ownerOf(first); owner != want {
				out = append(out, newFinding(RulePools, noBasisOwner, p.name, s.Name, "", fmt.Sprintf("owned by %s, ResourceSlice %s of the pool by %s: a pool has one owner", owner, first.Name, want)))
			}
			if sel, want := nodeSelection(s), nodeSelection(first); sel != want {
				out = append(out, newFinding(RulePools, basisPoolNodes, p.name, s.Name, "", fmt.Sprintf("selects %s, ResourceSlice %s of the pool %s", sel, first.Name, want)))
			}
		}
	}
	return out
}

// newFinding is a finding of rule, or a warning where its basis is
// NoBasis.
func newFinding(rule, basis, pool, slice, device, msg string) Finding {
	return Finding{Rule: rule, Basis: basis, Warning: strings.HasPrefix(basis, NoBasis), Pool: pool, Slice: slice, Device: device, Message: msg}
}

// ownerOf describes a slice's controller owner.
func ownerOf(s *resourceapi.ResourceSlice) string {
	for _, o := range s.OwnerReferences {
		if ptr.Deref(o.Controller, false) || len(s.OwnerReferences) == 1 {
			return fmt.Sprintf("%s %s", o.Kind, o.Name)
		}
	}
	return "nobody"
}

// nodeSelection describes the nodes a slice selects.
func nodeSelection(s *resourceapi.ResourceSlice) string {
	switch {
	case ptr.Deref(s.Spec.NodeName, "") != "":
		return "node " + *s.Spec.NodeName
	case ptr.Deref(s.Spec.AllNodes, false):
		return "all nodes"
	case s.Spec.NodeSelector != nil:
		return "a node selector"
	case ptr.Deref(s.Spec.PerDeviceNodeSelection, false):
		return "nodes per device"
	}
	return "no node"
}

// devices calls f for each device of the driver's newest pools.
func devices(in Input, f func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device)) {
	for _, p := range pools(in) {
		for _, s := range p.slices {
			for i := range s.Spec.Devices {
				f(p, s, &s.Spec.Devices[i])
			}
		}
	}
}

// StandardAttributes checks the types and formats of the standard
// attributes, and warns of other names in their domain.
func StandardAttributes(in Input) []Finding {
	var out []Finding
	devices(in, func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device) {
		bad := func(basis, format string, args ...any) {
			out = append(out, newFinding(RuleStandardAttributes, basis, p.name, s.Name, d.Name, fmt.Sprintf(format, args...)))
		}
		for _, name := range sortedNames(d.Attributes) {
			a := d.Attributes[resourceapi.QualifiedName(name)]
			if !strings.HasPrefix(name, standardDomain+"/") {
				continue
			}
			switch name {
			case attrPCIeRoot:
				if a.StringValue == nil || !pcieRootRe.MatchString(*a.StringValue) {
					bad(basisStandard, "%s is %s, want a string pci<domain>:<bus> (pci0000:00)", name, describe(a))
				}
			case attrPCIBusID:
				if a.StringValue == nil || !pciBusIDRe.MatchString(*a.StringValue) {
					bad(basisStandard, "%s is %s, want a string <domain>:<bus>:<device>.<function> (0000:07:00.0)", name, describe(a))
				}
			case attrNUMANode:
				// An int, or with list-type attributes (KEP-5491) an int
				// list: the device's own node first (KEP-6072).
				if !nonNegativeInts(a) {
					bad(basisStandard, "%s is %s, want a non-negative int or a non-empty list of them (omitted when the kernel reports -1)", name, describe(a))
				}
			default:
				bad(noBasisStandardName, "%s is not a standard attribute (%s, %s, %s)", name, attrPCIeRoot, attrPCIBusID, attrNUMANode)
			}
		}
	})
	return out
}

// QualifiedNames warns of attribute and capacity names that are not bare
// (the driver's domain), in the driver's domain or the standard one.
func QualifiedNames(in Input) []Finding {
	var out []Finding
	devices(in, func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device) {
		check := func(kind, name string) {
			domain, _, qualified := strings.Cut(name, "/")
			if !qualified || domain == in.Driver || domain == standardDomain {
				return
			}
			whose := "no driver's"
			if slices.Contains(in.OtherDrivers, domain) {
				whose = "driver " + domain + "'s"
			}
			out = append(out, newFinding(RuleQualifiedNames, noBasisQualifiedNames, p.name, s.Name, d.Name,
				fmt.Sprintf("%s %s is in domain %s, %s: a driver names its own attributes (%s/…, or a bare name) and the standard ones (%s/…)", kind, name, domain, whose, in.Driver, standardDomain)))
		}
		for _, name := range sortedNames(d.Attributes) {
			check("attribute", name)
		}
		for _, name := range sortedNames(d.Capacity) {
			check("capacity", name)
		}
	})
	return out
}

// Identity checks that the identity attribute's values are unique.
func Identity(in Input) []Finding {
	if in.Identity == "" {
		return nil
	}
	full := in.Identity
	if !strings.Contains(full, "/") {
		full = in.Driver + "/" + full
	}
	var out []Finding
	seen := map[string]string{}
	devices(in, func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device) {
		a, ok := lookup(d.Attributes, in.Driver, full)
		if !ok || a.StringValue == nil {
			return
		}
		id := p.name + "/" + d.Name
		if other, dup := seen[*a.StringValue]; dup {
			out = append(out, newFinding(RuleIdentity, basisIdentity, p.name, s.Name, d.Name, fmt.Sprintf("%s %q is also the identity of device %s", full, *a.StringValue, other)))
			return
		}
		seen[*a.StringValue] = id
	})
	return out
}

// NodeSelection checks that the Node a slice is for exists, and warns
// where it does not own the slice.
func NodeSelection(in Input) []Finding {
	nodes := map[string]corev1.Node{}
	for _, n := range in.Nodes {
		nodes[n.Name] = n
	}
	var out []Finding
	for _, p := range pools(in) {
		for _, s := range p.slices {
			name := ptr.Deref(s.Spec.NodeName, "")
			if name == "" {
				continue
			}
			n, ok := nodes[name]
			if !ok {
				out = append(out, newFinding(RuleNodeSelection, basisNodeExists, p.name, s.Name, "", fmt.Sprintf("nodeName %s names no Node of the cluster", name)))
				continue
			}
			owned := false
			for _, o := range s.OwnerReferences {
				if o.Kind == "Node" && o.Name == name && o.UID == n.UID {
					owned = true
				}
			}
			if !owned {
				out = append(out, newFinding(RuleNodeSelection, noBasisNodeOwner, p.name, s.Name, "", fmt.Sprintf("for node %s but not owned by that Node (owner %s): it outlives the node", name, ownerOf(s))))
			}
		}
	}
	return out
}

// Counters checks consumptions against the pool's counter sets.
func Counters(in Input) []Finding {
	var out []Finding
	for _, p := range pools(in) {
		sets := map[string]resourceapi.CounterSet{}
		for _, s := range p.slices {
			for _, cs := range s.Spec.SharedCounters {
				sets[cs.Name] = cs
			}
		}
		for _, s := range p.slices {
			for _, d := range s.Spec.Devices {
				for _, c := range d.ConsumesCounters {
					set, ok := sets[c.CounterSet]
					if !ok {
						out = append(out, newFinding(RuleCounters, basisCounterSets, p.name, s.Name, d.Name, fmt.Sprintf("consumes counter set %s, which no slice of the pool declares", c.CounterSet)))
						continue
					}
					for _, name := range sortedNames(c.Counters) {
						total, ok := set.Counters[name]
						used := c.Counters[name].Value
						switch {
						case !ok:
							out = append(out, newFinding(RuleCounters, basisCounterSets, p.name, s.Name, d.Name, fmt.Sprintf("consumes counter %s, which counter set %s lacks", name, set.Name)))
						case used.Cmp(total.Value) > 0:
							out = append(out, newFinding(RuleCounters, basisCounterFit, p.name, s.Name, d.Name, fmt.Sprintf("consumes %s of counter %s, counter set %s holds %s: it can never be allocated",
								used.String(), name, set.Name, total.Value.String())))
						}
					}
				}
			}
		}
	}
	return out
}

// lookup finds an attribute by its full name, also when it is published
// bare in the driver's domain.
func lookup(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, driver, full string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := attrs[resourceapi.QualifiedName(full)]; ok {
		return a, true
	}
	if bare, ok := strings.CutPrefix(full, driver+"/"); ok {
		a, ok := attrs[resourceapi.QualifiedName(bare)]
		return a, ok
	}
	return resourceapi.DeviceAttribute{}, false
}

func describe(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return fmt.Sprintf("the string %q", *a.StringValue)
	case a.IntValue != nil:
		return fmt.Sprintf("the int %d", *a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprintf("the bool %t", *a.BoolValue)
	case a.VersionValue != nil:
		return fmt.Sprintf("the version %q", *a.VersionValue)
	}
	return "of another type"
}

func sortedNames[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// nonNegativeInts says whether a is a non-negative int or a non-empty list
// of non-negative ints.
func nonNegativeInts(a resourceapi.DeviceAttribute) bool {
	if a.IntValue != nil {
		return *a.IntValue >= 0
	}
	if len(a.IntValues) == 0 {
		return false
	}
	for _, v := range a.IntValues {
		if v < 0 {
			return false
		}
	}
	return true
}
