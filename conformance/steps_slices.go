package conformance

import (
	"context"
	"fmt"
	"strings"
)

// sliceSteps look at what the driver publishes in its ResourceSlices.
func sliceSteps() []stepDef {
	return []stepDef{
		{`^the driver publishes at least (\d+) devices?$`, driverPublishesAtLeast},
		{`^the driver publishes (\d+) devices on one node with the same "([^"]+)"$`, driverPublishesSharing},
	}
}

// currentDevices lists the driver's devices now.
func (w *world) currentDevices(ctx context.Context) ([]publishedDevice, error) {
	slices, err := listDriverSlices(ctx, w.kube, w.cfg.DriverName)
	if err != nil {
		return nil, err
	}
	return publishedDevices(slices, w.cfg.DriverName), nil
}

func driverPublishesAtLeast(ctx context.Context, n int) error {
	w, err := worldFrom(ctx)
	if err != nil {
		return err
	}
	return poll(ctx, w.cfg.Timeouts.Publish, fmt.Sprintf("driver %s to publish at least %d devices in ResourceSlices", w.cfg.DriverName, n), func(ctx context.Context) (bool, string, error) {
		devices, err := w.currentDevices(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(devices) >= n, fmt.Sprintf("%d devices", len(devices)), nil
	})
}

// driverPublishesSharing skips the scenario when no node has n devices of
// the kit's DeviceClass with one value of attr: the hardware cannot exercise
// the constraint.
func driverPublishesSharing(ctx context.Context, n int, attr string) (context.Context, error) {
	w, err := worldFrom(ctx)
	if err != nil {
		return ctx, err
	}
	devices, err := w.classDevices(ctx, w.cfg.deviceClass())
	if err != nil {
		return ctx, err
	}
	if _, ok := devicesSharingAttribute(devices, w.cfg.DriverName, attr, n); !ok {
		return skip(ctx, fmt.Sprintf("no node has %d devices of driver %s with the same %s (%s), so the scenario cannot run on this hardware",
			n, w.cfg.DriverName, attr, describeAttribute(devices, w.cfg.DriverName, attr)))
	}
	return ctx, nil
}

// describeAttribute summarizes attr over devices for skip reasons.
func describeAttribute(devices []publishedDevice, driver, attr string) string {
	counts := map[string]int{}
	missing := 0
	for _, d := range devices {
		a, ok := lookupAttribute(d.Attributes, driver, attr)
		if !ok {
			missing++
			continue
		}
		counts[d.Node+" "+attributeString(a)]++
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
	return strings.Join(sortedCopy(parts), ", ")
}
