package opaqueconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kit"
	"drakit.dev/drakit/conformance/report"
)

// opaqueConfigSteps pass the driver the sample opaque configuration its
// declaration supplies (deviceKinds[].opaqueConfig) and check the effect it
// declares in the container: a driver decodes only its own configuration,
// so the kit never invents one.
func (w *world) opaqueConfigSteps() []kit.StepDef {
	return []kit.StepDef{
		{Pattern: `^a ResourceClaim "([^"]+)" requesting (\d+) devices? with the driver's sample opaque config$`, Fn: w.claimWithSampleConfig, Needs: kit.NeedsWhole(false, 1)},
		{Pattern: `^pod "([^"]+)" shows the effect of the driver's sample opaque config$`, Fn: w.podShowsSampleConfig},
	}
}

// noOpaqueConfigReason is why the opaque configuration scenarios do not
// apply to a driver that declares no sample.
const noOpaqueConfigReason = report.NotDeclaredPrefix + "the driver declares no sample opaque configuration (deviceKinds[].opaqueConfig): it may define none"

// claimWithSampleConfig asks for n devices of the driver's DeviceClass with
// the declared sample as the request's opaque configuration.
func (w *world) claimWithSampleConfig(ctx context.Context, name string, n int) (context.Context, error) {
	sample := w.Driver.OpaqueConfig
	if sample == nil {
		return kit.Skip(ctx, noOpaqueConfigReason)
	}
	spec := kit.ClaimSpec(w.Driver.DeviceClass(), int64(n))
	spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{
		Requests: []string{kit.RequestName},
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: w.Driver.DriverName, Parameters: runtime.RawExtension{Raw: sample.Parameters},
		}},
	}}
	return ctx, w.CreateClaim(ctx, kit.NewClaim(name, spec))
}

// podShowsSampleConfig checks that the pod's container has every variable
// the declaration names as the sample's effect, with its value (a name with
// placeholders once per device allocated to the pod): what the container
// sees, not what the driver says it did.
func (w *world) podShowsSampleConfig(name string) error {
	sample := w.Driver.OpaqueConfig
	if sample == nil {
		return fmt.Errorf("pod %s: the driver declares no sample opaque configuration (deviceKinds[].opaqueConfig)", name)
	}
	p, err := w.RunningPod(name)
	if err != nil {
		return err
	}
	in := w.Driver.Injected()
	var bad []string
	check := func(k, want string) {
		got, ok := p.Report.Env[k]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("pod %s: the driver ignored the opaque config its declaration supplies: the container has no %s (want %s=%s)", name, k, k, want))
		case got != want:
			bad = append(bad, fmt.Sprintf("pod %s: the driver did not apply the opaque config its declaration supplies: the container has %s=%s, want %s", name, k, got, want))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sample.Env)) {
		pattern := declaration.EnvVariable{Name: k, Value: sample.Env[k]}
		if !strings.ContainsRune(k, '{') {
			check(k, sample.Env[k])
			continue
		}
		if len(p.Devices) == 0 {
			bad = append(bad, fmt.Sprintf("pod %s: no device of driver %s is allocated to its claims, so the kit cannot name the variables %s", name, w.Driver.DriverName, k))
		}
		for _, d := range p.Devices {
			v := in.Values(d)
			n, nerr := pattern.ExpandName(v)
			val, verr := pattern.ExpandValue(v)
			if err := errors.Join(nerr, verr); err != nil {
				bad = append(bad, fmt.Sprintf("pod %s: device %s: %v", name, d.ID(), err))
				continue
			}
			check(n, val)
		}
	}
	return kit.Findings(bad)
}
