package pluginharness

import (
	"context"
	"errors"
	"time"

	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// ErrDeviceWithdrawn is the cause of a prepare that names a device the
// driver published at start and withdrew with Plugin.Update (e.g. a GPU
// that fell off the bus).
var ErrDeviceWithdrawn = errors.New("the driver withdrew this device from its pool (the hardware is gone); it cannot be prepared")

// Resources is what the plugin publishes: what Driver.Discover returned,
// or what the last Update gave.
func (p *Plugin[D, P]) Resources() resourceslice.DriverResources {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resources
}

// Update replaces what the plugin publishes (taints added or removed,
// devices withdrawn or back) and has Serve hand it to the kubelet plugin
// helper at once, with a bumped pool generation: the ResourceSlice
// controller would keep the generation for a change that one update of
// one slice makes, so Update asks for a generation above any it had,
// the time of the update in milliseconds since the epoch (or one more than
// the last, whichever is larger), which also stays above what a driver
// restarted since published. Prepare refuses a device of the pool Discover returned
// that resources no longer has with ErrDeviceWithdrawn. Drivers whose pool
// never changes do not call it. It waits for a prepare or unprepare in
// progress to finish.
func (p *Plugin[D, P]) Update(resources resourceslice.DriverResources) {
	p.mu.Lock()
	names := deviceNames(resources, p.cfg.NodeName)
	for name := range p.published {
		if !names[name] {
			p.withdrawn[name] = true
		}
	}
	for name := range names {
		delete(p.withdrawn, name)
	}
	p.generation = max(p.generation+1, time.Now().UnixMilli())
	pools := make(map[string]resourceslice.Pool, len(resources.Pools))
	for name, pool := range resources.Pools {
		pool.Generation = p.generation
		pools[name] = pool
	}
	resources.Pools = pools
	p.resources, p.published = resources, names
	p.mu.Unlock()
	select {
	case p.updated <- struct{}{}:
	default: // Serve has not published the previous update yet; it reads Resources then
	}
}

// Updated is signalled after Update; Serve publishes Resources then.
func (p *Plugin[D, P]) Updated() <-chan struct{} { return p.updated }

// deviceNames are the names of the devices of pool in resources.
func deviceNames(resources resourceslice.DriverResources, pool string) map[string]bool {
	out := map[string]bool{}
	for _, s := range resources.Pools[pool].Slices {
		for _, d := range s.Devices {
			out[d.Name] = true
		}
	}
	return out
}

// updater is a served plugin whose pool changes at run time (a *Plugin, or
// a driver's plugin embedding one).
type updater interface {
	Updated() <-chan struct{}
}

// publisher is what publishUntilDone needs of the kubelet plugin helper.
type publisher interface {
	PublishResources(ctx context.Context, resources resourceslice.DriverResources) error
}

// publishUntilDone hands p's resources to pub again whenever p signals an
// update and, when interval is positive, every interval, until ctx ends.
// An unchanged pool costs the ResourceSlice controller a comparison with
// its informer's slices, no API call.
func publishUntilDone(ctx context.Context, pub publisher, p Served, interval time.Duration) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var updated <-chan struct{}
	if u, ok := p.(updater); ok {
		updated = u.Updated()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-updated:
		}
		if err := pub.PublishResources(ctx, p.Resources()); err != nil {
			klog.FromContext(ctx).Error(err, "Publishing ResourceSlices again failed")
		}
	}
}
