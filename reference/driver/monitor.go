package driver

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/internal/nvidiahw"
)

// Health watcher timing: NVML waits of eventWait (NVIDIA's DRA driver and
// device plugin wait 5 s in their health loops), every GPU's fault state
// read at least every pollInterval, so that the end of a fault (a GPU
// reset, which has no NVML event) shows within a second. A read of the
// state costs nanoseconds per query on the emulator and microseconds on a
// real GPU.
const (
	eventWait    = time.Second
	pollInterval = time.Second
)

// monitor is the health watcher: it turns fault events and state into each
// device's status (evaluate), republishes the pool when taints or the
// withdrawn devices change, and serves the health stream.
type monitor struct {
	driverName, pool string
	src              faultSource
	// gpus are the discovered GPUs; devices every device discovery found,
	// published or withdrawn.
	gpus    []GPU
	devices []device
	// build makes the pool from the devices' statuses; update publishes
	// it (pluginharness.Plugin.Update).
	build  func(status map[string]deviceStatus) (resourceslice.DriverResources, error)
	update func(resourceslice.DriverResources)
	// migDevice names the published device of a GPU's MIG device by GI and
	// CI id: static MIG devices from discovery, dynamic ones from the
	// prepared claims.
	migDevice func(uuid string, gi, ci int) (string, bool)

	mu     sync.Mutex
	faults map[string]gpuFaults    // by GPU UUID
	xids   map[string][]xidFault   // by GPU UUID (whole GPU) or device name (MIG device)
	status map[string]deviceStatus // by device name
	// changed is closed and replaced whenever status changes.
	changed chan struct{}
}

func newMonitor(driverName, pool string, src faultSource, gpus []GPU, devices []device) *monitor {
	return &monitor{
		driverName: driverName, pool: pool, src: src, gpus: gpus, devices: devices,
		faults: map[string]gpuFaults{}, xids: map[string][]xidFault{}, status: map[string]deviceStatus{},
		changed: make(chan struct{}),
	}
}

// run waits for events and reads the GPUs' state again after each and at
// least every pollInterval, until ctx ends; readAll has read it once
// before. It closes the source.
func (m *monitor) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	defer func() {
		if err := m.src.Close(); err != nil {
			logger.Error(err, "Closing the NVML fault source failed")
		}
	}()
	last := time.Now()
	for ctx.Err() == nil {
		ev, ok, err := m.src.Wait(ctx, eventWait)
		switch {
		case err != nil:
			logger.Error(err, "Waiting for GPU events failed")
			select { // no busy loop on a persistent error
			case <-ctx.Done():
			case <-time.After(eventWait):
			}
		case ok:
			m.event(ctx, ev)
		}
		if time.Since(last) >= pollInterval {
			m.readAll(ctx)
			last = time.Now()
		}
	}
}

// readAll reads every GPU's fault state and applies it.
func (m *monitor) readAll(ctx context.Context) {
	for _, g := range m.gpus {
		m.read(ctx, g.UUID)
	}
	m.apply(ctx)
}

// read reads one GPU's fault state. A GPU whose state went back to what a
// reset leaves, from a state a reset clears, loses its Xid faults.
func (m *monitor) read(ctx context.Context, uuid string) gpuFaults {
	f, err := m.src.Faults(uuid)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading GPU fault state partly failed", "gpu", uuid, "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.faults[uuid]; ok && !old.reset() && f.reset() {
		klog.FromContext(ctx).Info("GPU recovered", "gpu", uuid)
		m.clearXids(uuid)
	}
	m.faults[uuid] = f
	return f
}

// gpuName is the device name of the GPU with this UUID (gpu-<minor>), the
// UUID itself for a GPU discovery did not find.
func (m *monitor) gpuName(uuid string) string {
	for i := range m.gpus {
		if m.gpus[i].UUID == uuid {
			return m.gpus[i].DeviceName()
		}
	}
	return uuid
}

// clearXids forgets the Xid faults of the GPU and its MIG devices.
func (m *monitor) clearXids(uuid string) {
	delete(m.xids, uuid)
	for _, d := range m.devices {
		if d.GPU.UUID == uuid {
			delete(m.xids, d.Name)
		}
	}
}

// event handles one NVML event: a device Xid becomes a fault of the GPU
// (or of the MIG device its instance ids name) with the effect of the
// recovery action read right after it; an application Xid is logged only.
// Every event re-reads the GPU's state.
func (m *monitor) event(ctx context.Context, ev faultEvent) {
	logger := klog.FromContext(ctx)
	f := m.read(ctx, ev.UUID)
	if ev.Type&nvml.EventTypeXidCriticalError != 0 {
		target, device := ev.UUID, m.gpuName(ev.UUID)
		if ev.GI != noInstance {
			name, ok := m.migDevice(ev.UUID, int(ev.GI), int(ev.CI))
			if !ok {
				// A MIG device the driver does not publish: the GPU's
				// other devices are not hit.
				logger.Info("Xid on a MIG device this driver does not publish", "gpu", ev.UUID, "gi", ev.GI, "ci", ev.CI, "xid", ev.Data)
				m.apply(ctx)
				return
			}
			target, device = name, name
		}
		effect := xidEffect(ev.Data, f.Recovery, f.RecoveryKnown)
		if x, ok := nvidiahw.LookupXid(ev.Data); ok && x.Kind == nvidiahw.XidApplication {
			logger.V(2).Info("Application Xid", "gpu", ev.UUID, "device", device, "xid", ev.Data, "description", nvidiahw.DescribeXid(ev.Data))
		} else {
			logger.Info("Device fault", "gpu", ev.UUID, "device", device, "xid", ev.Data, "description", nvidiahw.DescribeXid(ev.Data), "effect", effect)
			if effect != "" {
				m.mu.Lock()
				m.xids[target] = append(m.xids[target], xidFault{Code: ev.Data, Effect: effect})
				m.mu.Unlock()
			}
		}
	} else {
		logger.V(2).Info("GPU event", "gpu", ev.UUID, "type", ev.Type, "data", ev.Data)
	}
	m.apply(ctx)
}

// apply evaluates every device and, when a status changed, logs it, wakes
// the health streams and publishes the pool again when its taints or
// withdrawn devices changed.
func (m *monitor) apply(ctx context.Context) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	next := make(map[string]deviceStatus, len(m.devices))
	for _, d := range m.devices {
		xids := slices.Clone(m.xids[d.GPU.UUID])
		if d.Kind != kindGPU {
			xids = append(xids, m.xids[d.Name]...)
		}
		next[d.Name] = evaluate(m.driverName, m.faults[d.GPU.UUID], xids)
	}
	if reflect.DeepEqual(next, m.status) {
		m.mu.Unlock()
		return
	}
	republish := len(m.status) == 0
	for _, d := range m.devices {
		old, st := m.status[d.Name], next[d.Name]
		if old.Health != st.Health || old.Message != st.Message {
			logger.Info("Device health", "device", d.Name, "gpu", d.GPU.UUID, "health", st.Health, "message", st.Message)
		}
		if !reflect.DeepEqual(old.Taints, st.Taints) || old.Withdrawn != st.Withdrawn {
			republish = true
		}
	}
	m.status = next
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	if !republish {
		return
	}
	res, err := m.build(next)
	if err != nil {
		logger.Error(err, "Building the pool with the devices' health failed; publishing what was published before")
		return
	}
	m.update(res)
}

// report is the health of every device discovery found, and a channel
// closed at the next change.
func (m *monitor) report(now time.Time) (kubeletplugin.DeviceHealthReport, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r kubeletplugin.DeviceHealthReport
	for _, name := range slices.Sorted(maps.Keys(m.status)) {
		st := m.status[name]
		r.Devices = append(r.Devices, kubeletplugin.DeviceHealth{
			PoolName: m.pool, DeviceName: name, Health: st.Health, Message: st.Message,
			LastUpdated: now, HealthCheckTimeout: healthCheckTimeout,
		})
	}
	return r, m.changed
}
