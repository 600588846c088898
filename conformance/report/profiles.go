package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"drakit.dev/drakit/conformance/declaration"
)

// Conformance levels: every scenario carries one of these tags next to its
// @kep-<number> tag.
const (
	// CoreTag marks a scenario of the KEP's required contract: every driver
	// conformant to the KEP's profile passes it.
	CoreTag = "@core"
	// ExtendedTag marks optional behaviour: a capability the driver may
	// leave unclaimed, a convention of its own, or something the kit can
	// check only with access it may lack (the node's file system, the
	// emulator, the driver's pods).
	ExtendedTag = "@extended"
)

// level is a scenario's conformance level.
type level string

const (
	levelCore     level = "core"
	levelExtended level = "extended"
)

// levelOf is the level of a scenario with these tags: extended with
// ExtendedTag, core otherwise (a scenario that does not say it is optional
// is held to the contract).
func levelOf(tags []string) level {
	if slices.Contains(tags, ExtendedTag) {
		return levelExtended
	}
	return levelCore
}

// profile groups the scenarios of some KEPs, as Gateway API's conformance
// profiles do: its Core scenarios must pass, its Extended ones may be
// skipped.
type profile struct {
	name        string
	description string
	// keps are the KEPs whose scenarios (@kep-<number>) are the profile's,
	// but those tagged with a gate of gates (any profile's).
	keps []int
	// gates are sub-features of a KEP whose scenarios carry the
	// sub-feature's tag (@<name>) next to the KEP's: they are this
	// profile's, not the KEP's profile's. A sub-feature is an alpha
	// feature gate's (@DRAPartitionableDevicesType) or a kind of hardware
	// only some drivers have (@nvlink-fabric), so that a driver without it
	// leaves the profile not applicable rather than its KEP's partial.
	gates []profileGate
}

// profileGate is a sub-feature, by the name of its tag, and the KEP it
// belongs to.
type profileGate struct {
	name string
	kep  int
}

// profiles are the conformance profiles; each KEP of the features is in
// exactly one.
var profiles = []profile{
	{
		name:        "core",
		description: "structured parameters (KEP-4381, GA): what every DRA driver does",
		keps:        []int{4381},
	},
	{
		name:        "prioritized-list",
		description: "prioritized lists of alternatives (KEP-4816, GA): the scheduler takes a request's first satisfiable firstAvailable subrequest, config and constraints follow it, quota charges the worst case; every DRA driver",
		keps:        []int{4816},
	},
	{
		name:        "admin-access",
		description: "admin access (KEP-5018, GA): only labelled namespaces may ask for it; drivers that claim adminAccess prepare devices other claims hold without taking them",
		keps:        []int{5018},
	},
	{
		name:        "extended-resources",
		description: "extended resources backed by DRA (KEP-5004, GA): a pod asks for a DeviceClass's extended resource in resources.limits and gets devices through the claim the scheduler creates for it; quota and nodes count them once; every DRA driver",
		keps:        []int{5004},
	},
	{
		name:        "partitionable",
		description: "partitionable devices (KEP-4815, beta): drivers whose devices consume shared counters, such as GPUs and their MIG partitions",
		keps:        []int{4815},
	},
	{
		name:        "consumable-capacity",
		description: "consumable capacity (KEP-5075, beta): drivers whose devices several claims share, each consuming part of a capacity, such as a NIC's bandwidth",
		keps:        []int{5075},
	},
	{
		name:        "device-status",
		description: "device status (KEP-4817, GA): drivers that report conditions, data and network data of allocated devices in ResourceClaim status",
		keps:        []int{4817},
	},
	{
		name:        "device-taints",
		description: "device taints and tolerations (KEP-5055, GA): DeviceTaintRules the kit creates keep claims off a driver's devices and evict the pods using them; every DRA driver",
		keps:        []int{5055},
	},
	{
		name:        "device-health",
		description: "device health in pod status (KEP-4680, beta): drivers that stream their devices' health to the kubelet, which shows it in the status of the pods using the devices",
		keps:        []int{4680},
	},
	{
		name:        "device-metadata",
		description: "device metadata files (KEP-5304, beta, no feature gate): drivers that claim deviceMetadata write, for each request of a prepared claim, a file the containers using it read, naming the devices with their ResourceSlice attributes",
		keps:        []int{5304},
	},
	{
		name:        "workload-claims",
		description: "ResourceClaims of PodGroups (KEP-5729, beta, off by default: scheduling.k8s.io/v1beta1 and the gates GenericWorkload and DRAWorkloadResourceClaims): one claim that every pod of a group uses; every DRA driver",
		keps:        []int{5729},
	},
	{
		name:        "pool-status",
		description: "resource pool status (KEP-5677, alpha: resource.k8s.io/v1alpha3 and the gate DRAResourcePoolStatus in the API server and kube-controller-manager): ResourcePoolStatusRequests report what the driver's pools hold, as the stored slices and claims say; every DRA driver",
		keps:        []int{5677},
	},
	{
		name:        "binding-conditions",
		description: "device binding conditions (KEP-5007, beta): the scheduler binds a pod only once the conditions of its device, which an attach controller reports, are True; the kit's own devices skip node operations, so the cluster needs DRAOptionalNodeOperations too; drivers that claim bindingConditions publish such devices",
		keps:        []int{5007},
	},
	{
		name:        "node-allocatable",
		description: "node allocatable resources (KEP-5517, alpha, off by default: gate DRANodeAllocatableResources): the API server's checks of nodeAllocatableResources; drivers whose devices' capacity counts against the Node's allocatable cpu and memory, in the scheduler and the pod's cgroup",
		keps:        []int{5517},
	},
	{
		name:        "numa-node",
		description: "the standard numaNode attribute (KEP-6072, GA): drivers that publish resource.kubernetes.io/numaNode, held to the node's sysfs",
		keps:        []int{6072},
	},
	{
		name:        "pod-resources",
		description: "the kubelet's PodResources API for DRA (KEP-3695, GA): List and Get report each container's claims, their devices and the CDI devices the driver prepared; every DRA driver, on a node whose kubelet socket the kit can reach",
		keps:        []int{3695},
	},
	{
		name:        "alpha",
		description: "alpha features: partition types (KEP-4815's gate DRAPartitionableDevicesType) and compatibility groups (KEP-5963) of partitionable devices, optional node operations (KEP-5945), list-type attributes (KEP-5491) and derived attributes (KEP-6080); the cluster needs their feature gates",
		keps:        []int{5963, 5945, 5491, 6080},
		gates:       []profileGate{{name: "DRAPartitionableDevicesType", kep: 4815}},
	},
	{
		name:        "hardware-faults",
		description: "faults of the hardware under a driver's devices (@hardware-faults): the kit breaks the hardware under a claim with the fault command the driver declares (drakit's emulator supplies one for its GPUs: an Xid error, then a reset) and reads what the API server stored: the health the driver streams into the pod's status (KEP-4680) and the taints it publishes (KEP-5055), as the driver declares its answer to each fault; drivers that declare faults and a fault command",
		gates:       []profileGate{{name: "hardware-faults", kep: 4680}, {name: "hardware-faults", kep: 5055}},
	},
	{
		name:        "nvidia-fabric",
		description: "NVLink fabrics (@nvlink-fabric, KEP-4381): GPUs of one multi-node NVLink clique, as NVML in the container reports it, and IMEX channels shared by pods on the clique's nodes; drivers that declare an NVLink fabric or IMEX channels",
		gates:       []profileGate{{name: "nvlink-fabric", kep: 4381}},
	},
	{
		name:        "tpu-torus",
		description: "chips of a 3D torus and multi-host sub-slices (@tpu-torus, KEP-4815): a sub-slice's chips form its shape in the torus, as the emulator's ground truth on each host says; drivers that declare a torus",
		gates:       []profileGate{{name: "tpu-torus", kep: 4815}},
	},
	{
		name:        "pci-topology",
		description: "the node's PCI topology (@pci-topology, KEP-4381): the published devices are the node's PCI functions, with their PCIe roots, and a claim aligned with a peer driver's device on resource.kubernetes.io/pcieRoot gets devices below one root complex, as the node's sysfs says; drivers of PCI devices, with the node's sysfs readable",
		gates:       []profileGate{{name: "pci-topology", kep: 4381}},
	},
}

// gateTags are the tags of every profile's gates; of those of KEP kep
// only, unless kep is 0.
func gateTags(kep int) []string {
	var tags []string
	for _, p := range profiles {
		for _, g := range p.gates {
			if kep == 0 || g.kep == kep {
				tags = append(tags, gateTagOf(g.name))
			}
		}
	}
	return tags
}

func gateTagOf(gate string) string { return "@" + gate }

// gateOf is the profile gate a scenario with these tags is tagged with,
// next to the gate's KEP; "" for none.
func gateOf(tags []string) string {
	for _, p := range profiles {
		for _, g := range p.gates {
			if slices.Contains(tags, gateTagOf(g.name)) && slices.Contains(tags, kepTagOf(g.kep)) {
				return g.name
			}
		}
	}
	return ""
}

// ProfileNames returns the names of the conformance profiles.
func ProfileNames() []string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.name
	}
	return names
}

// ProfileOf returns the name of the conformance profile that judges a
// scenario with these tags (feature tags included); false when no profile
// includes it (no @kep-<number> tag of a profile's KEP).
func ProfileOf(tags []string) (string, bool) {
	for _, p := range profiles {
		if p.includes(tags) {
			return p.name, true
		}
	}
	return "", false
}

// ValidateProfile accepts "" (every profile) and the name of a profile.
func ValidateProfile(name string) error {
	_, err := lookupProfile(name)
	return err
}

// lookupProfile returns the profile called name; nil for "".
func lookupProfile(name string) (*profile, error) {
	if name == "" {
		return nil, nil
	}
	for i := range profiles {
		if profiles[i].name == name {
			return &profiles[i], nil
		}
	}
	return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
}

// Filter returns the godog tag filter that selects the scenarios of the
// profile called name that tags (a godog tag filter, empty for all) selects.
// An empty name returns tags.
func Filter(name, tags string) (string, error) {
	p, err := lookupProfile(name)
	if err != nil || p == nil {
		return tags, err
	}
	var alts []string
	selectors := make([]string, 0, len(p.keps)+len(p.gates))
	for _, kep := range p.keps {
		sel := kepTagOf(kep)
		for _, g := range gateTags(kep) {
			sel += " && ~" + g
		}
		selectors = append(selectors, sel)
	}
	for _, g := range p.gates {
		selectors = append(selectors, kepTagOf(g.kep)+" && "+gateTagOf(g.name))
	}
	for _, tag := range selectors {
		if strings.TrimSpace(tags) == "" {
			alts = append(alts, tag)
			continue
		}
		// godog's filters have no parentheses: (a, b) && c is a && c, b && c.
		for _, alt := range strings.Split(tags, ",") {
			alts = append(alts, tag+" && "+strings.TrimSpace(alt))
		}
	}
	return strings.Join(alts, ","), nil
}

func kepTagOf(kep int) string { return "@kep-" + strconv.Itoa(kep) }

// keps returns the KEP numbers of a scenario's @kep-<number> tags.
func keps(tags []string) []int {
	var out []int
	for _, t := range tags {
		if kepTag.MatchString(t) {
			n, err := strconv.Atoi(strings.TrimPrefix(t, "@kep-"))
			if err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// includes says whether a scenario with these tags is one of the profile's:
// by its gate tag when it has one of a profile's gates next to the gate's
// KEP, else by its KEP.
func (p profile) includes(tags []string) bool {
	if g := gateOf(tags); g != "" {
		return slices.ContainsFunc(p.gates, func(pg profileGate) bool {
			return pg.name == g && slices.Contains(tags, kepTagOf(pg.kep))
		})
	}
	for _, k := range keps(tags) {
		if slices.Contains(p.keps, k) {
			return true
		}
	}
	return false
}

// ClusterCheckTag marks a scenario that checks the API server, the
// scheduler or a controller rather than the driver: it validates the
// cluster, and the report lists it apart from the driver's verdict.
const ClusterCheckTag = "@cluster-check"

// NotEligiblePrefix starts the skip reason of a scenario the cluster cannot
// run (its Kubernetes version, a feature gate or an API version it does not
// serve): neither the driver's failure nor a skip of the driver's.
const NotEligiblePrefix = "not eligible on this cluster: "

// NotDeclaredPrefix starts the skip reason of a scenario that needs what
// the driver's declaration says it does not have (a partition kind, a
// memory capacity): like an unclaimed capability, the scenario does not
// apply to the driver.
const NotDeclaredPrefix = "not declared: "

// UnclaimedSkip says whether a skip reason says that the scenario does not
// apply to the driver, in the kit's words: "capability " +
// Capability.String() + " unclaimed" (for example "capability
// partitionableDevices (KEP-4815) unclaimed"), or NotDeclaredPrefix.
func UnclaimedSkip(reason string) bool {
	if strings.HasPrefix(reason, NotDeclaredPrefix) {
		return true
	}
	for _, c := range declaration.KnownCapabilities() {
		if strings.HasPrefix(reason, "capability "+c.String()+" unclaimed") {
			return true
		}
	}
	return false
}
