package kit

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"drakit.dev/drakit/conformance/inventory"
)

// The driver's devices a scenario names: "the scenario holds device "a"
// of the driver" picks whole devices of the scenario's lease, which later
// steps of any package refer to by alias (HeldDevice).

// QuotedName matches each name in "a", "b" and "c".
var QuotedName = regexp.MustCompile(`"([^"]+)"`)

// needsNamedDevices leases one whole device per name.
func needsNamedDevices(n *ScenarioNeeds, args []string) {
	n.WholeAtLeast = max(n.WholeAtLeast, len(QuotedName.FindAllString(args[0], -1)))
}

// holdDevices names whole devices of the scenario's lease, with an
// identity, in lease order.
func (w *World) holdDevices(ctx context.Context, list string) error {
	names := QuotedName.FindAllStringSubmatch(list, -1)
	taken := map[string]bool{}
	for _, d := range w.held {
		taken[d.ID()] = true
	}
	var free []inventory.Device
	for _, u := range w.LeasedUnits(ctx) {
		for _, d := range u.Whole {
			if d.Identity != "" && !taken[d.ID()] {
				free = append(free, d)
			}
		}
	}
	// Devices that consume no counters first: what the lease holds for a
	// scenario that asked for them.
	consumes := func(d inventory.Device) int { return min(len(d.Consumes), 1) }
	slices.SortStableFunc(free, func(a, b inventory.Device) int { return consumes(a) - consumes(b) })
	if len(free) < len(names) {
		return fmt.Errorf("the scenario needs %d whole devices of driver %s with identity attribute %s, it may use %d", len(names), w.Driver.DriverName, w.Driver.UUIDAttribute, len(free))
	}
	for i, m := range names {
		if _, dup := w.held[m[1]]; dup {
			return fmt.Errorf("device %q: the scenario named it already", m[1])
		}
		w.held[m[1]] = free[i]
	}
	return nil
}

// HeldDevice is the device the scenario named alias.
func (w *World) HeldDevice(alias string) (inventory.Device, error) {
	d, ok := w.held[alias]
	if !ok {
		return inventory.Device{}, fmt.Errorf("device %q: the scenario did not name it (a step \"the scenario holds device %q of the driver\" must come first)", alias, alias)
	}
	return d, nil
}

// heldSteps name the devices of the scenario's lease.
func (w *World) heldSteps() []StepDef {
	return []StepDef{
		{Pattern: `^the scenario holds devices? ((?:"[^"]+"(?:, | and )?)+) of the driver$`, Fn: w.holdDevices, Needs: needsNamedDevices},
	}
}
