package driver

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// staticMIGInventory has gpu-0 with two static MIG devices (GI 1 and GI 2,
// CI 0 each) and gpu-1 without MIG.
func staticMIGInventory() *Inventory {
	inv := testInventory()
	inv.GPUs = inv.GPUs[:2]
	inv.GPUs[0].MIG = &MIGInfo{Instances: []MIGInstance{
		{GI: 1, CI: 0, ProfileID: 9, Start: 0, Size: 4, Name: "3g.40gb", UUID: "MIG-1", MemoryBytes: 40 << 30},
		{GI: 2, CI: 0, ProfileID: 9, Start: 4, Size: 4, Name: "3g.40gb", UUID: "MIG-2", MemoryBytes: 40 << 30},
	}}
	return inv
}

// monitorEnv is a monitor over a fake fault source whose published pools
// the test reads.
type monitorEnv struct {
	m         *monitor
	src       *fakeFaults
	published []resourceslice.DriverResources
}

func newMonitorEnv(t *testing.T, inv *Inventory) *monitorEnv {
	t.Helper()
	hw := &hardware{driverName: testDriver, poolName: testNode, disc: staticDiscoverer{inv}}
	if _, err := hw.Discover(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	devs, err := inv.devices(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &monitorEnv{src: newFakeFaults()}
	e.m = newMonitor(testDriver, testNode, e.src, inv.GPUs, devs)
	e.m.build = func(status map[string]deviceStatus) (resourceslice.DriverResources, error) {
		return buildResources(testNode, inv, publishOptions{DriverName: testDriver, Status: status})
	}
	e.m.update = func(r resourceslice.DriverResources) { e.published = append(e.published, r) }
	e.m.migDevice = func(uuid string, gi, ci int) (string, bool) { return hw.migDevice(nil, uuid, gi, ci) }
	return e
}

func testContext(t *testing.T) context.Context {
	return klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
}

// pool is the last published pool's devices with their taints.
func (e *monitorEnv) pool(t *testing.T) []string {
	t.Helper()
	if len(e.published) == 0 {
		t.Fatal("nothing published")
	}
	var out []string
	for _, s := range e.published[len(e.published)-1].Pools[testNode].Slices {
		for _, d := range s.Devices {
			out = append(out, d.Name+" "+taintString(d.Taints))
		}
	}
	return out
}

func xidEvent(uuid string, code uint64, gi, ci uint32) faultEvent {
	return faultEvent{UUID: uuid, Type: nvml.EventTypeXidCriticalError, Data: code, GI: gi, CI: ci}
}

// TestMonitorMIGFaults: an Xid with instance ids taints that MIG device
// only, a whole-GPU Xid all of the GPU's devices; application Xids and
// device Xids whose recovery action is none taint nothing; faults without
// a recovery action last until the driver restarts; a lost GPU's MIG
// devices are withdrawn with it.
func TestMonitorMIGFaults(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	inv := staticMIGInventory()
	e := newMonitorEnv(t, inv)
	gpu0, gpu1 := inv.GPUs[0].UUID, inv.GPUs[1].UUID
	e.m.readAll(ctx)
	clean := []string{"gpu-0-mig-gi1-ci0 ", "gpu-0-mig-gi2-ci0 ", "gpu-1 "}
	if diff := cmp.Diff(clean, e.pool(t)); diff != "" {
		t.Fatalf("first pool (-want +got):\n%s", diff)
	}
	steps := []struct {
		name string
		set  func()
		ev   *faultEvent
		want []string
	}{
		{"application Xid on a MIG device", nil, ptrTo(xidEvent(gpu0, 31, 1, 0)), clean},
		{"device Xid on a MIG device", nil, ptrTo(xidEvent(gpu0, 74, 2, 0)),
			[]string{"gpu-0-mig-gi1-ci0 ", "gpu-0-mig-gi2-ci0 gpu.drakit.dev/xid=74:NoSchedule", "gpu-1 "}},
		{"Xid on a MIG device the driver does not publish", nil, ptrTo(xidEvent(gpu0, 74, 5, 0)),
			[]string{"gpu-0-mig-gi1-ci0 ", "gpu-0-mig-gi2-ci0 gpu.drakit.dev/xid=74:NoSchedule", "gpu-1 "}},
		{"whole-GPU Xid", nil, ptrTo(xidEvent(gpu0, 48, noInstance, noInstance)),
			[]string{"gpu-0-mig-gi1-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-0-mig-gi2-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-1 "}},
		{"without a recovery action the faults stay", nil, nil,
			[]string{"gpu-0-mig-gi1-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-0-mig-gi2-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-1 "}},
		{"device Xid with recovery action none", func() { e.src.set(gpu1, gpuFaults{RecoveryKnown: true}) }, ptrTo(xidEvent(gpu1, 94, noInstance, noInstance)),
			[]string{"gpu-0-mig-gi1-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-0-mig-gi2-ci0 gpu.drakit.dev/xid=48:NoExecute", "gpu-1 "}},
		{"gpu-0 lost", func() { e.src.set(gpu0, gpuFaults{Lost: true}) }, nil, []string{"gpu-1 "}},
		{"gpu-0 back: the Xids of before the loss are gone", func() { e.src.set(gpu0, gpuFaults{}) }, nil, clean},
		{"device Xid with recovery action drain-p2p", func() {
			e.src.set(gpu1, gpuFaults{Recovery: nvml.GPU_RECOVERY_ACTION_DRAIN_P2P, RecoveryKnown: true})
		}, ptrTo(xidEvent(gpu1, 74, noInstance, noInstance)),
			[]string{"gpu-0-mig-gi1-ci0 ", "gpu-0-mig-gi2-ci0 ", "gpu-1 gpu.drakit.dev/xid=74:NoSchedule,gpu.drakit.dev/recovery-action=drain-p2p:NoSchedule"}},
		{"gpu-1 reset", func() { e.src.set(gpu1, gpuFaults{RecoveryKnown: true}) }, nil, clean},
	}
	for _, s := range steps {
		if s.set != nil {
			s.set()
		}
		if s.ev != nil {
			e.m.event(ctx, *s.ev)
		} else {
			e.m.readAll(ctx)
		}
		if diff := cmp.Diff(s.want, e.pool(t)); diff != "" {
			t.Fatalf("%s: pool (-want +got):\n%s", s.name, diff)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestMonitorRepublishesOnlyOnChange: a status change that leaves taints
// and devices alone (a message) wakes the health streams but publishes
// nothing.
func TestMonitorRepublishesOnlyOnChange(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	inv := testInventory()
	e := newMonitorEnv(t, inv)
	e.m.readAll(ctx)
	e.m.readAll(ctx)
	if len(e.published) != 1 {
		t.Fatalf("%d publishes after two unchanged reads, want 1", len(e.published))
	}
	_, changed := e.m.report(time.Now())
	// Still 3 errors → 2: the taint stays, the message changes.
	e.src.set(inv.GPUs[0].UUID, gpuFaults{DoubleBitECC: 3})
	e.m.readAll(ctx)
	e.src.set(inv.GPUs[0].UUID, gpuFaults{DoubleBitECC: 2})
	e.m.readAll(ctx)
	if len(e.published) != 2 {
		t.Errorf("%d publishes, want 2 (the taint once)", len(e.published))
	}
	select {
	case <-changed:
	default:
		t.Error("a status change did not wake the health streams")
	}
	r, _ := e.m.report(time.Now())
	if d := r.Devices[0]; d.DeviceName != "gpu-0" || d.Message != "2 uncorrectable (double-bit) ECC errors since the last reset: reset the GPU" {
		t.Errorf("gpu-0's report %+v, want the count 2", d)
	}
}

// TestHealthStream: a report of every device at start, one on every
// change, and resends while nothing changes; the stream returns when ctx
// ends.
func TestHealthStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	inv := testInventory()
	e := newMonitorEnv(t, inv)
	e.m.readAll(ctx)
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- e.m.stream(ctx, reports, 50*time.Millisecond) }()
	summary := func(r kubeletplugin.DeviceHealthReport) []string {
		var out []string
		for _, d := range r.Devices {
			out = append(out, d.PoolName+"/"+d.DeviceName+" "+string(d.Health)+" "+d.Message)
			if d.HealthCheckTimeout != 30*time.Second || d.LastUpdated.IsZero() {
				t.Errorf("device %s: timeout %v, last updated %v; want 30s and a time", d.DeviceName, d.HealthCheckTimeout, d.LastUpdated)
			}
		}
		return out
	}
	allHealthy := []string{testNode + "/gpu-0 Healthy ", testNode + "/gpu-1 Healthy ", testNode + "/gpu-3 Healthy "}
	if diff := cmp.Diff(allHealthy, summary(<-reports)); diff != "" {
		t.Errorf("first report (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(allHealthy, summary(<-reports)); diff != "" {
		t.Errorf("resent report (-want +got):\n%s", diff)
	}
	e.src.set(inv.GPUs[2].UUID, gpuFaults{Lost: true})
	e.m.readAll(ctx)
	want := []string{testNode + "/gpu-0 Healthy ", testNode + "/gpu-1 Healthy ",
		testNode + "/gpu-3 Unhealthy GPU is lost (NVML: GPU is lost; Xid 79 (GPU has fallen off the bus)): reseat or replace the GPU; reboot the node"}
	deadline := time.After(30 * time.Second)
	for got := summary(<-reports); !cmp.Equal(want, got); got = summary(<-reports) {
		select {
		case <-deadline:
			t.Fatalf("no report with gpu-3 lost in 30s; last (-want +got):\n%s", cmp.Diff(want, got))
		default:
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stream returned %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stream did not return 30s after cancel")
	}
}
