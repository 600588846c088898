package kit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cucumber/godog"
	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/report"
)

// numaNodeAttribute is the standard attribute of KEP-6072.
const numaNodeAttribute resourceapi.QualifiedName = "resource.kubernetes.io/numaNode"

// validateCapabilities checks that every name is a known capability and
// that what each requires is claimed too.
func validateCapabilities(names []string) error {
	var errs []error
	for _, n := range names {
		c, ok := declaration.LookupCapability(declaration.CapabilityName(n))
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a capability (known: %s)", n, strings.Join(capabilityNames(), ", ")))
			continue
		}
		for _, r := range c.Requires {
			if !slices.Contains(names, string(r)) {
				errs = append(errs, fmt.Errorf("%s requires %s, which is not claimed", c, r))
			}
		}
	}
	return errors.Join(errs...)
}

func capabilityNames() []string {
	var out []string
	for _, c := range declaration.KnownCapabilities() {
		out = append(out, string(c.Name))
	}
	return out
}

// claims says whether the driver claims the capability.
func (c DriverSettings) Claims(name declaration.CapabilityName) bool {
	return slices.Contains(c.Capabilities, string(name))
}

// unclaimedReason is the skip reason for a capability the driver does not
// claim, in the words report.unclaimedSkip recognises:
// "capability partitionableDevices (KEP-4815) unclaimed: …".
func unclaimedReason(name declaration.CapabilityName) string {
	c, ok := declaration.LookupCapability(name)
	if !ok {
		return fmt.Sprintf("capability %s unclaimed", name)
	}
	return fmt.Sprintf("capability %s unclaimed: the driver does not say that %s", c, c.Meaning)
}

// capabilityEvidence says, per capability, what in the driver's
// ResourceSlices shows that the driver has it: the first slice or device
// that uses one of its fields. Capabilities without a trace in slices
// (adminAccess, device health, …) never have evidence.
func capabilityEvidence(sl []resourceapi.ResourceSlice) map[declaration.CapabilityName]string {
	ev := map[declaration.CapabilityName]string{}
	note := func(c declaration.CapabilityName, format string, args ...any) {
		if _, seen := ev[c]; !seen {
			ev[c] = fmt.Sprintf(format, args...)
		}
	}
	for _, s := range sl {
		spec := s.Spec
		if len(spec.SharedCounters) > 0 {
			note(declaration.CapabilityPartitionableDevices, "ResourceSlice %s declares sharedCounters (counter set %s)", s.Name, spec.SharedCounters[0].Name)
		}
		if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
			note(declaration.CapabilityPerDeviceNodeSelection, "ResourceSlice %s sets perDeviceNodeSelection", s.Name)
		}
		if spec.PartitionTypeAttribute != nil {
			note(declaration.CapabilityPartitionableDevicesType, "ResourceSlice %s sets partitionTypeAttribute %s", s.Name, *spec.PartitionTypeAttribute)
		}
		if len(spec.SkipNodeOperations) > 0 {
			note(declaration.CapabilityOptionalNodeOperations, "ResourceSlice %s sets skipNodeOperations", s.Name)
		}
		for _, d := range spec.Devices {
			id := fmt.Sprintf("device %s/%s (ResourceSlice %s)", spec.Pool.Name, d.Name, s.Name)
			if len(d.ConsumesCounters) > 0 {
				note(declaration.CapabilityPartitionableDevices, "%s consumes counters of counter set %s", id, d.ConsumesCounters[0].CounterSet)
			}
			for _, c := range d.ConsumesCounters {
				if len(c.CompatibilityGroups) > 0 {
					note(declaration.CapabilityDeviceCompatibilityGroups, "%s names compatibilityGroups %v", id, c.CompatibilityGroups)
				}
			}
			if len(d.Taints) > 0 {
				note(declaration.CapabilityDeviceTaints, "%s has taints", id)
			}
			if len(d.BindingConditions) > 0 {
				note(declaration.CapabilityBindingConditions, "%s has bindingConditions", id)
			}
			if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
				note(declaration.CapabilityConsumableCapacity, "%s sets allowMultipleAllocations", id)
			}
			if len(d.NodeAllocatableResources) > 0 {
				note(declaration.CapabilityNodeAllocatableResources, "%s maps nodeAllocatableResources", id)
			}
			if _, ok := d.Attributes[numaNodeAttribute]; ok {
				note(declaration.CapabilityNUMANodeAttribute, "%s publishes %s", id, numaNodeAttribute)
			}
			for _, name := range slices.Sorted(maps.Keys(d.Attributes)) {
				if a := d.Attributes[name]; len(a.IntValues)+len(a.BoolValues)+len(a.StringValues)+len(a.VersionValues) > 0 {
					note(declaration.CapabilityListTypeAttributes, "%s publishes the list attribute %s", id, name)
				}
			}
		}
	}
	return ev
}

// requireCapability lets a scenario go on when the driver claims the
// capability, noting the claim for the verdict: a claimed capability whose
// scenario then cannot run is a finding. Otherwise the scenario is skipped
// as unclaimed — unless the driver's slices show the capability: a driver
// must not escape a scenario by leaving unclaimed what it publishes, so
// that fails.
func (w *World) RequireCapability(ctx context.Context, name declaration.CapabilityName) (context.Context, error) {
	if w.Driver.Claims(name) {
		return godog.Attach(ctx, godog.Attachment{FileName: report.ClaimedCapabilityAttachment, MediaType: "text/plain", Body: []byte(name)}), nil
	}
	sl, err := w.DriverSlices(ctx)
	if err != nil {
		return ctx, err
	}
	if ev, ok := capabilityEvidence(sl)[name]; ok {
		c, _ := declaration.LookupCapability(name)
		return ctx, fmt.Errorf("capability %s unclaimed, but driver %s publishes it: %s; claim it (capabilities: {%s: true} in the driver declaration, or --capabilities %s) so that the kit judges it",
			c, w.Driver.DriverName, ev, name, name)
	}
	return Skip(ctx, unclaimedReason(name))
}

// claimsCapability is the step "the driver claims the capability X": the
// scenarios of a capability that test the cluster with the kit's own test
// driver belong to the capability's profile, and run only for drivers that
// claim it.
func (w *World) claimsCapability(ctx context.Context, name string) (context.Context, error) {
	if _, ok := declaration.LookupCapability(declaration.CapabilityName(name)); !ok {
		return ctx, fmt.Errorf("%q is not a capability (known: %s)", name, strings.Join(capabilityNames(), ", "))
	}
	return w.RequireCapability(ctx, declaration.CapabilityName(name))
}

// capabilitySteps check what the driver claims.
func (w *World) capabilitySteps() []StepDef {
	return []StepDef{
		{Pattern: `^the driver claims the capability "([^"]+)"$`, Fn: w.claimsCapability},
	}
}
