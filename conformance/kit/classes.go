package kit

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
)

// celFeatures are the CEL features the kit's own evaluation enables: every
// beta feature of 1.37 that changes what a selector may use.
var celFeatures = cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true}

// selectDevices returns the devices for which every CEL expression is true,
// as the scheduler evaluates DeviceClass and request selectors. A runtime
// error of an expression counts as "does not match", as in the scheduler's
// allocator, and is reported only when no device matches at all.
func selectDevices(ctx context.Context, driver string, devices []PublishedDevice, exprs []string) ([]PublishedDevice, error) {
	compiled := make([]cel.CompilationResult, len(exprs))
	for i, expr := range exprs {
		compiled[i] = cel.GetCompiler(celFeatures).CompileCELExpression(expr, cel.Options{})
		if compiled[i].Error != nil {
			return nil, fmt.Errorf("compile CEL selector %q: %w", expr, compiled[i].Error)
		}
	}
	var out []PublishedDevice
	var lastErr error
	for _, d := range devices {
		ok := true
		for i := range compiled {
			match, _, err := compiled[i].DeviceMatches(ctx, cel.Device{Driver: driver, Attributes: d.Attributes, Capacity: d.Capacity})
			if err != nil {
				lastErr = fmt.Errorf("evaluate CEL selector %q on device %s: %w", exprs[i], d.ID(), err)
			}
			if err != nil || !match {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, d)
		}
	}
	if len(out) == 0 && lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}

// classDevices returns the driver's published devices that the DeviceClass
// className selects: the devices a request for that class can get.
func (w *World) ClassDevices(ctx context.Context, className string) ([]PublishedDevice, error) {
	class, err := w.Kube.ResourceV1().DeviceClasses().Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get DeviceClass %s: %w", className, err)
	}
	devices, err := w.CurrentDevices(ctx)
	if err != nil {
		return nil, err
	}
	return selectDevices(ctx, w.Driver.DriverName, devices, classSelectors(class))
}

// classSelectors are a DeviceClass's CEL expressions.
func classSelectors(class *resourceapi.DeviceClass) []string {
	var exprs []string
	for _, s := range class.Spec.Selectors {
		if s.CEL != nil {
			exprs = append(exprs, s.CEL.Expression)
		}
	}
	return exprs
}
