package kit

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
)

// sliceSteps look at what the driver publishes in its ResourceSlices.
func (w *World) sliceSteps() []StepDef {
	return []StepDef{
		{Pattern: `^the driver publishes at least (\d+) devices?$`, Fn: w.driverPublishesAtLeast, Needs: NeedsWhole(true, 0)},
		{`^the driver publishes (\d+) devices on one node with the same "([^"]+)"$`, w.driverPublishesSharing, func(n *ScenarioNeeds, a []string) {
			NeedsWhole(true, 0)(n, a)
			n.sameAttribute = resourceapi.QualifiedName(a[1])
		}},
		{Pattern: `^every slice of the driver with counter-consuming devices names a partition type attribute that each of them has as a string$`, Fn: w.driverNamesPartitionTypes},
		{Pattern: `^the driver publishes compatibility groups$`, Fn: w.driverPublishesCompatibilityGroups},
	}
}

// driverNamesPartitionTypes checks partition types (KEP-4815, alpha gate
// DRAPartitionableDevicesType) on what the API server stored:
// every slice of the driver with a counter-consuming device sets
// partitionTypeAttribute, and every such device carries that attribute as a
// string. A driver that names none is skipped: the field is optional.
func (w *World) driverNamesPartitionTypes(ctx context.Context) (context.Context, error) {
	ctx, err := w.RequireCapability(ctx, declaration.CapabilityPartitionableDevicesType)
	if err != nil {
		return ctx, err
	}
	slices, err := w.DriverSlices(ctx)
	if err != nil {
		return ctx, err
	}
	consuming, named := 0, 0
	var bad []string
	for _, sl := range slices {
		var devices []resourceapi.Device
		for _, d := range sl.Spec.Devices {
			if len(d.ConsumesCounters) > 0 {
				devices = append(devices, d)
			}
		}
		if len(devices) == 0 {
			continue
		}
		consuming++
		if sl.Spec.PartitionTypeAttribute == nil {
			bad = append(bad, fmt.Sprintf("slice %s has %d counter-consuming devices but no partitionTypeAttribute", sl.Name, len(devices)))
			continue
		}
		named++
		attr := string(*sl.Spec.PartitionTypeAttribute)
		for _, d := range devices {
			a, ok := observe.LookupAttribute(d.Attributes, w.Driver.DriverName, attr)
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("slice %s: device %s consumes counters but has no attribute %s, the slice's partitionTypeAttribute", sl.Name, d.Name, attr))
			case a.StringValue == nil:
				bad = append(bad, fmt.Sprintf("slice %s: device %s has partition type attribute %s as %s, not a string", sl.Name, d.Name, attr, observe.AttributeString(a)))
			}
		}
	}
	switch {
	case consuming == 0:
		return Skip(ctx, "the driver publishes no counter-consuming devices")
	case named == 0:
		return Skip(ctx, fmt.Sprintf("none of the driver's %d slices with counter-consuming devices sets partitionTypeAttribute (the alpha field is optional for drivers)", consuming))
	}
	return ctx, Findings(bad)
}

// driverPublishesCompatibilityGroups skips the scenario when no device of
// the driver names a compatibility group (KEP-5963 is optional for drivers).
func (w *World) driverPublishesCompatibilityGroups(ctx context.Context) (context.Context, error) {
	ctx, err := w.RequireCapability(ctx, declaration.CapabilityDeviceCompatibilityGroups)
	if err != nil {
		return ctx, err
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return ctx, err
	}
	for _, d := range devices {
		for _, c := range d.Consumes {
			if len(c.CompatibilityGroups) > 0 {
				return ctx, nil
			}
		}
	}
	return Skip(ctx, "no device of the driver names a compatibility group in its counter consumption")
}

// currentDevices lists the driver's devices now.
func (w *World) CurrentDevices(ctx context.Context) ([]PublishedDevice, error) {
	slices, err := w.DriverSlices(ctx)
	if err != nil {
		return nil, err
	}
	return publishedDevices(slices, w.Driver.DriverName), nil
}

func (w *World) driverPublishesAtLeast(ctx context.Context, n int) error {
	return Poll(ctx, w.Cfg.Timeouts.Publish, fmt.Sprintf("driver %s to publish at least %d devices in ResourceSlices", w.Driver.DriverName, n), func(ctx context.Context) (bool, string, error) {
		devices, err := w.CurrentDevices(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(devices) >= n, fmt.Sprintf("%d devices", len(devices)), nil
	})
}

// driverPublishesSharing skips the scenario when no node has n devices of
// the kit's DeviceClass with one value of attr: the hardware cannot exercise
// the constraint.
func (w *World) driverPublishesSharing(ctx context.Context, n int, attr string) (context.Context, error) {
	if resourceapi.QualifiedName(attr) == numaNodeAttribute {
		var err error
		if ctx, err = w.RequireCapability(ctx, declaration.CapabilityNUMANodeAttribute); err != nil {
			return ctx, err
		}
	}
	devices, err := w.ClassDevices(ctx, w.Driver.DeviceClass())
	if err != nil {
		return ctx, err
	}
	if _, ok := devicesSharingAttribute(devices, w.Driver.DriverName, attr, n); !ok {
		return Skip(ctx, fmt.Sprintf("no node has %d devices of driver %s with the same %s (%s), so the scenario cannot run on this hardware",
			n, w.Driver.DriverName, attr, describeAttribute(devices, w.Driver.DriverName, attr)))
	}
	return ctx, nil
}

// describeAttribute summarizes attr over devices for skip reasons.
func describeAttribute(devices []PublishedDevice, driver, attr string) string {
	counts := map[string]int{}
	missing := 0
	for _, d := range devices {
		a, ok := observe.LookupAttribute(d.Attributes, driver, attr)
		if !ok {
			missing++
			continue
		}
		counts[d.Node+" "+observe.AttributeString(a)]++
	}
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%d on node/value %s", v, k))
	}
	if missing > 0 {
		parts = append(parts, fmt.Sprintf("%d without the attribute", missing))
	}
	if len(parts) == 0 {
		return "no devices"
	}
	return strings.Join(SortedCopy(parts), ", ")
}
