package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// deviceSteps compare what a pod's container sees (the probe's report) with
// the devices the API server says are allocated to the pod's claims.
func (w *world) deviceSteps() []stepDef {
	return []stepDef{
		{`^the driver exports one environment variable per allocated device$`, w.driverExportsEnv},
		{`^pod "([^"]+)" sees exactly the GPUs allocated to its claims through NVML$`, w.podSeesAllocatedGPUs},
		{`^pod "([^"]+)" has device nodes for exactly the GPUs allocated to its claims$`, w.podHasAllocatedDeviceNodes},
		{`^pod "([^"]+)" has an environment variable for exactly the devices allocated to its claims$`, w.podHasAllocatedEnv},
		{`^pod "([^"]+)" sees the same GPUs as pod "([^"]+)"$`, w.podsSeeSameGPUs},
	}
}

// envSkipReason explains why environment checks do not apply.
const envSkipReason = "the driver under test declares no per-device environment variables (no device environment prefix or name pattern)"

func (w *world) driverExportsEnv(ctx context.Context) (context.Context, error) {
	if w.cfg.DeviceEnvPrefix == "" && w.cfg.DeviceEnvName == "" {
		return skip(ctx, envSkipReason)
	}
	return ctx, nil
}

// podWithDevices returns a running pod that has devices of the driver
// allocated; comparing an empty allocation would prove nothing.
func (w *world) podWithDevices(name string) (*podRecord, error) {
	p, err := w.runningPod(name)
	if err != nil {
		return nil, err
	}
	if len(p.devices) == 0 {
		return nil, fmt.Errorf("pod %s: no devices of driver %s are allocated to its claims, so there is nothing to compare", name, w.cfg.DriverName)
	}
	return p, nil
}

func (w *world) podSeesAllocatedGPUs(ctx context.Context, name string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	return ctx, findings(observe.CheckNVML(name, w.cfg.UUIDAttribute, p.devices, *p.report))
}

func (w *world) podHasAllocatedDeviceNodes(ctx context.Context, name string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	return ctx, findings(observe.CheckDeviceNodes(name, p.devices, *p.report))
}

func (w *world) podHasAllocatedEnv(ctx context.Context, name string) (context.Context, error) {
	if w.cfg.DeviceEnvPrefix == "" && w.cfg.DeviceEnvName == "" {
		return skip(ctx, envSkipReason)
	}
	p, err := w.podWithDevices(name)
	if err != nil {
		return ctx, err
	}
	if env := w.cfg.deviceEnv(); env != nil {
		all, err := w.currentDevices(ctx)
		if err != nil {
			return ctx, err
		}
		// The devices of the nodes the pod's devices are on.
		nodes := map[string]bool{}
		for _, a := range p.devices {
			if d, ok := findDevice(all, a.Pool, a.Device); ok {
				nodes[d.Node] = true
			}
		}
		var node []observe.Device
		for _, d := range all {
			if nodes[d.Node] {
				node = append(node, observe.Device{Pool: d.Pool, Device: d.Name, Attributes: d.Attributes, Capacity: d.Capacity})
			}
		}
		return ctx, findings(observe.CheckEnvPattern(name, w.cfg.DriverName, w.cfg.UUIDAttribute, env, p.devices, node, *p.report))
	}
	return ctx, findings(observe.CheckEnv(name, w.cfg.DeviceEnvPrefix, p.devices, *p.report))
}

// podsSeeSameGPUs compares the GPU UUIDs two pods saw through NVML; the
// second pod may already be gone, its report is remembered.
func (w *world) podsSeeSameGPUs(ctx context.Context, name, other string) (context.Context, error) {
	if !w.cfg.observes(declaration.ObserverNVML) {
		return skip(ctx, nvmlSkipReason)
	}
	p, err := w.runningPod(name)
	if err != nil {
		return ctx, err
	}
	o, err := w.runningPod(other)
	if err != nil {
		return ctx, err
	}
	got, want := nvmlUUIDs(*p.report), nvmlUUIDs(*o.report)
	if len(want) == 0 {
		return ctx, fmt.Errorf("pod %s saw no GPUs through NVML, so there is nothing to compare", other)
	}
	if !sets.New(got...).Equal(sets.New(want...)) {
		return ctx, fmt.Errorf("pod %s sees GPUs [%s] through NVML, pod %s saw [%s]", name, strings.Join(got, ", "), other, strings.Join(want, ", "))
	}
	return ctx, nil
}

// nvmlUUIDs is the sorted set of GPU UUIDs in a report.
func nvmlUUIDs(r probe.Report) []string {
	out := make([]string, 0, len(r.NVML.GPUs))
	for _, g := range r.NVML.GPUs {
		out = append(out, g.UUID)
	}
	sort.Strings(out)
	return out
}
