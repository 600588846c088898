package driver

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

// faultyGPU is a mock GPU with settable fault state; lost makes every
// query return ERROR_GPU_IS_LOST.
type faultyGPU struct {
	lost       bool
	recovery   nvml.Return // the field value's own return
	action     uint32
	dbe        uint64
	remap      bool
	clocks     uint64
	registered uint64
}

func (g *faultyGPU) device() *mock.Device {
	lost := func(ret nvml.Return) nvml.Return {
		if g.lost {
			return nvml.ERROR_GPU_IS_LOST
		}
		return ret
	}
	return &mock.Device{
		GetSupportedEventTypesFunc: func() (uint64, nvml.Return) {
			return nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypePState, lost(nvml.SUCCESS)
		},
		RegisterEventsFunc: func(types uint64, _ nvml.EventSet) nvml.Return { g.registered = types; return lost(nvml.SUCCESS) },
		GetFieldValuesFunc: func(v []nvml.FieldValue) nvml.Return {
			v[0].NvmlReturn = uint32(g.recovery)
			v[0].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			binary.NativeEndian.PutUint32(v[0].Value[:4], g.action)
			return lost(nvml.SUCCESS)
		},
		GetTotalEccErrorsFunc: func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			return g.dbe, lost(nvml.SUCCESS)
		},
		GetRetiredPagesPendingStatusFunc: func() (nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_DISABLED, lost(nvml.ERROR_NOT_SUPPORTED)
		},
		GetRemappedRowsFunc:              func() (int, int, bool, bool, nvml.Return) { return 0, 1, g.remap, false, lost(nvml.SUCCESS) },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) { return g.clocks, lost(nvml.SUCCESS) },
	}
}

// TestNVMLFaults reads fault state and events through go-nvml's interface
// as the watcher does on a node: supported events registered, the recovery
// action from its field, NOT_SUPPORTED as no information, a lost GPU, an
// event mapped to its GPU, a timeout.
func TestNVMLFaults(t *testing.T) {
	t.Parallel()
	g := &faultyGPU{recovery: nvml.SUCCESS, action: uint32(nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET), dbe: 2, remap: true,
		clocks: nvml.ClocksThrottleReasonHwSlowdown}
	dev := g.device()
	var waits []uint32
	next := []nvml.Return{nvml.SUCCESS, nvml.ERROR_TIMEOUT}
	set := &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			waits = append(waits, ms)
			ret := next[0]
			next = next[1:]
			return nvml.EventData{Device: dev, EventType: nvml.EventTypeXidCriticalError, EventData: 74, GpuInstanceId: 1, ComputeInstanceId: 0}, ret
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	inits, shutdowns := 0, 0
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { inits++; return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { shutdowns++; return nvml.SUCCESS },
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
		DeviceGetHandleByUUIDFunc: func(uuid string) (nvml.Device, nvml.Return) {
			if uuid != "GPU-a" {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return dev, nvml.SUCCESS
		},
	}
	f, err := openNVMLFaults(lib, []string{"GPU-a"})
	if err != nil {
		t.Fatal(err)
	}
	if g.registered != nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError {
		t.Errorf("registered events %#x, want the supported fault events", g.registered)
	}
	got, err := f.Faults("GPU-a")
	if err != nil {
		t.Fatal(err)
	}
	want := gpuFaults{Recovery: nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET, RecoveryKnown: true, DoubleBitECC: 2, RemapPending: true,
		Clocks: nvml.ClocksThrottleReasonHwSlowdown}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fault state (-want +got):\n%s", diff)
	}

	g.recovery = nvml.ERROR_NOT_SUPPORTED
	if got, err := f.Faults("GPU-a"); err != nil || got.RecoveryKnown {
		t.Errorf("recovery action NOT_SUPPORTED: %+v, %v; want it unknown and no error", got, err)
	}
	g.lost = true
	if got, err := f.Faults("GPU-a"); err != nil || !cmp.Equal(got, gpuFaults{Lost: true}) {
		t.Errorf("lost GPU: %+v, %v; want Lost only", got, err)
	}
	g.lost = false
	lookups := 0
	lib.DeviceGetHandleByUUIDFunc = func(string) (nvml.Device, nvml.Return) { lookups++; return nil, nvml.ERROR_NOT_FOUND }
	if got, err := f.Faults("GPU-a"); got.Lost || err != nil || lookups != 0 {
		t.Errorf("GPU back: %+v, %v, %d UUID lookups; want it not lost, read through the handle it had", got, err, lookups)
	}
	if _, err := f.Faults("GPU-b"); err == nil || lookups != 1 {
		t.Error("an unknown GPU read without error")
	}

	ev, ok, err := f.Wait(t.Context(), 2*time.Second)
	if err != nil || !ok || !cmp.Equal(ev, faultEvent{UUID: "GPU-a", Type: nvml.EventTypeXidCriticalError, Data: 74, GI: 1, CI: 0}) {
		t.Errorf("Wait: %+v %v %v, want the Xid 74 event of GPU-a", ev, ok, err)
	}
	if _, ok, err := f.Wait(t.Context(), 2*time.Second); ok || err != nil {
		t.Errorf("Wait after the events: ok %v, %v; want a timeout", ok, err)
	}
	if !cmp.Equal(waits, []uint32{2000, 2000}) {
		t.Errorf("EventSetWait timeouts %v ms, want 2000 each", waits)
	}
	if err := f.Close(); err != nil || inits != 1 || shutdowns != 1 {
		t.Errorf("Close: %v; NVML Init %d, Shutdown %d times, want 1 each", err, inits, shutdowns)
	}
}

// TestNVMLFaultsWithoutEvents: NVML without event sets still gives a
// source; Wait then only waits.
func TestNVMLFaultsWithoutEvents(t *testing.T) {
	t.Parallel()
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
	f, err := openNVMLFaults(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, ok, err := f.Wait(t.Context(), 20*time.Millisecond); ok || err != nil {
		t.Errorf("Wait: ok %v, %v; want a timeout", ok, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Wait returned after %v, want it to wait the timeout (no busy loop)", d)
	}
}
