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
	// keps are the KEPs whose scenarios (@kep-<number>) are the profile's.
	keps []int
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
		description: "device health in pod status (KEP-4680, beta): drivers that stream their devices' health to the kubelet; the kit breaks the emulated GPU under a claim and reads the pod's status",
		keps:        []int{4680},
	},
	{
		name:        "workload-claims",
		description: "ResourceClaims of PodGroups (KEP-5729, beta, off by default: scheduling.k8s.io/v1beta1 and the gates GenericWorkload and DRAWorkloadResourceClaims): one claim that every pod of a group uses; every DRA driver",
		keps:        []int{5729},
	},
	{
		name:        "pod-resources",
		description: "the kubelet's PodResources API for DRA (KEP-3695, GA): List and Get report each container's claims, their devices and the CDI devices the driver prepared; every DRA driver, on a node whose kubelet socket the kit can reach",
		keps:        []int{3695},
	},
	{
		name:        "alpha",
		description: "alpha parts of partitionable devices, partition types (KEP-5677) and compatibility groups (KEP-5963); the cluster needs their feature gates",
		keps:        []int{5677, 5963},
	},
}

// ProfileNames returns the names of the conformance profiles.
func ProfileNames() []string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.name
	}
	return names
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
	for _, kep := range p.keps {
		tag := kepTagOf(kep)
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

// includes says whether a scenario with these tags is one of the profile's.
func (p profile) includes(tags []string) bool {
	for _, k := range keps(tags) {
		if slices.Contains(p.keps, k) {
			return true
		}
	}
	return false
}

// Profile results.
const (
	resultSuccess   = "success"
	resultPartial   = "partial"
	resultFailure   = "failure"
	resultUnclaimed = "unclaimed"
)

// outcome is what the profile rule looks at for one scenario.
type outcome struct {
	level  level
	status Status
	// unclaimed says that the scenario was skipped because the driver does
	// not claim the capability it needs (UnclaimedSkip).
	unclaimed bool
	// notRun says that the run's tag filter left the scenario out.
	notRun bool
}

// judge is the result of a profile whose scenarios had these outcomes
// (scenarios the run did not select count as skipped, not unclaimed):
// unclaimed when all were skipped, every Core one that ran as unclaimed;
// failure when one failed, was undefined or pending, a Core scenario was
// skipped, or none passed; else partial when an Extended scenario was
// skipped for another reason than an unclaimed capability; else success.
func judge(outcomes []outcome) string {
	if slices.ContainsFunc(outcomes, func(o outcome) bool { return o.unclaimed }) &&
		!slices.ContainsFunc(outcomes, func(o outcome) bool {
			return o.status != StatusSkipped || o.level == levelCore && !o.unclaimed && !o.notRun
		}) {
		return resultUnclaimed
	}
	passed, partial := false, false
	for _, o := range outcomes {
		switch {
		case o.status == StatusPassed:
			passed = true
		case o.status != StatusSkipped, o.level == levelCore:
			return resultFailure
		case !o.unclaimed:
			partial = true
		}
	}
	switch {
	case !passed:
		return resultFailure
	case partial:
		return resultPartial
	}
	return resultSuccess
}

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
