package driver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// faultEvent is one NVML event of a GPU.
type faultEvent struct {
	UUID string
	// Type is the nvml.EventType*; Data the Xid code for an Xid event.
	Type uint64
	Data uint64
	// GI and CI are the MIG device's GPU and compute instance ids, or
	// noInstance for the whole GPU.
	GI, CI uint32
}

// noInstance is NVML's GPU/compute instance id of an event of a whole GPU.
const noInstance = 0xFFFFFFFF

// faultEvents are the event types the watcher registers, as far as a GPU
// supports them.
const faultEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError

// faultSource is where the health watcher learns about GPU faults:
// nvmlFaults on a node, a fake in tests.
type faultSource interface {
	// Wait waits up to timeout (or until ctx ends) for the next event;
	// ok is false when none came.
	Wait(ctx context.Context, timeout time.Duration) (ev faultEvent, ok bool, err error)
	// Faults reads the persistent fault state of the GPU with this UUID.
	// What NVML does not support reads as healthy; err reports other
	// failures, next to what could be read.
	Faults(uuid string) (gpuFaults, error)
	// Close releases the source.
	Close() error
}

// nvmlFaults is the faultSource of real NVML (or the emulator's shim): one
// NVML session and event set for the watcher's lifetime.
type nvmlFaults struct {
	lib     nvml.Interface
	set     nvml.EventSet // nil when NVML has no events
	handles map[string]nvml.Device
	// registered are the GPUs whose events the set receives.
	registered map[string]bool
}

// openNVMLFaults starts an NVML session and registers the fault events of
// the GPUs with these UUIDs. A GPU that is lost, or NVML without events,
// still gives a source: Faults then reads what it can, Wait only waits.
func openNVMLFaults(lib nvml.Interface, uuids []string) (*nvmlFaults, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("initialize NVML: %w", ret)
	}
	f := &nvmlFaults{lib: lib, handles: map[string]nvml.Device{}, registered: map[string]bool{}}
	set, ret := lib.EventSetCreate()
	switch ret {
	case nvml.SUCCESS:
		f.set = set
	case nvml.ERROR_NOT_SUPPORTED:
	default:
		lib.Shutdown()
		return nil, fmt.Errorf("create NVML event set: %w", ret)
	}
	for _, uuid := range uuids {
		f.register(uuid)
	}
	return f, nil
}

// handle returns the GPU's handle, looked up by UUID once it is found.
func (f *nvmlFaults) handle(uuid string) (nvml.Device, nvml.Return) {
	if h, ok := f.handles[uuid]; ok {
		return h, nvml.SUCCESS
	}
	h, ret := f.lib.DeviceGetHandleByUUID(uuid)
	if ret == nvml.SUCCESS {
		f.handles[uuid] = h
	}
	return h, ret
}

// register registers the GPU's supported fault events once.
func (f *nvmlFaults) register(uuid string) {
	if f.set == nil || f.registered[uuid] {
		return
	}
	h, ret := f.handle(uuid)
	if ret != nvml.SUCCESS {
		return
	}
	supported, ret := h.GetSupportedEventTypes()
	if ret != nvml.SUCCESS || supported&faultEvents == 0 {
		return
	}
	if h.RegisterEvents(supported&faultEvents, f.set) == nvml.SUCCESS {
		f.registered[uuid] = true
	}
}

func (f *nvmlFaults) Wait(ctx context.Context, timeout time.Duration) (faultEvent, bool, error) {
	if f.set == nil {
		select {
		case <-ctx.Done():
		case <-time.After(timeout):
		}
		return faultEvent{}, false, nil
	}
	data, ret := f.set.Wait(uint32(timeout.Milliseconds()))
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_TIMEOUT:
		return faultEvent{}, false, nil
	default:
		return faultEvent{}, false, fmt.Errorf("wait for NVML events: %w", ret)
	}
	ev := faultEvent{Type: data.EventType, Data: data.EventData, GI: data.GpuInstanceId, CI: data.ComputeInstanceId}
	for uuid, h := range f.handles {
		if h == data.Device {
			ev.UUID = uuid
		}
	}
	if ev.UUID == "" && data.Device != nil {
		uuid, ret := data.Device.GetUUID()
		if ret != nvml.SUCCESS {
			return faultEvent{}, false, fmt.Errorf("get UUID of the GPU of an NVML event: %w", ret)
		}
		ev.UUID = uuid
	}
	return ev, true, nil
}

// answered sorts an NVML return: SUCCESS true; NOT_SUPPORTED false (no
// information); GPU_IS_LOST marks f lost; anything else is an error.
func answered(ret nvml.Return, what string, f *gpuFaults, errs *[]error) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
	case nvml.ERROR_GPU_IS_LOST:
		f.Lost = true
	default:
		*errs = append(*errs, fmt.Errorf("get %s: %w", what, ret))
	}
	return false
}

func (f *nvmlFaults) Faults(uuid string) (gpuFaults, error) {
	var out gpuFaults
	var errs []error
	h, ret := f.handle(uuid)
	if !answered(ret, "handle", &out, &errs) {
		return out, errors.Join(errs...)
	}
	values := []nvml.FieldValue{{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION}}
	if answered(h.GetFieldValues(values), "GPU recovery action", &out, &errs) &&
		answered(nvml.Return(values[0].NvmlReturn), "GPU recovery action", &out, &errs) {
		out.Recovery, out.RecoveryKnown = nvml.DeviceGpuRecoveryAction(fieldUint(values[0])), true
	}
	if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); answered(ret, "volatile uncorrected ECC errors", &out, &errs) {
		out.DoubleBitECC = n
	}
	if s, ret := h.GetRetiredPagesPendingStatus(); answered(ret, "retired pages pending status", &out, &errs) {
		out.PagesPending = s == nvml.FEATURE_ENABLED
	}
	if _, _, pending, failure, ret := h.GetRemappedRows(); answered(ret, "remapped rows", &out, &errs) {
		out.RemapPending, out.RemapFailure = pending, failure
	}
	if r, ret := h.GetCurrentClocksEventReasons(); answered(ret, "clocks event reasons", &out, &errs) {
		out.Clocks = r
	}
	if out.Lost {
		// The handle stays: it answers again once the GPU is back (a lost
		// GPU's UUID lookup is NOT_FOUND).
		return gpuFaults{Lost: true}, nil
	}
	f.register(uuid)
	return out, errors.Join(errs...)
}

// fieldUint reads an unsigned field value (NVML's value union, native byte
// order).
func fieldUint(v nvml.FieldValue) uint64 {
	if nvml.ValueType(v.ValueType) == nvml.VALUE_TYPE_UNSIGNED_LONG_LONG {
		return binary.NativeEndian.Uint64(v.Value[:])
	}
	return uint64(binary.NativeEndian.Uint32(v.Value[:4]))
}

func (f *nvmlFaults) Close() error {
	var errs []error
	if f.set != nil {
		if ret := f.set.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("free NVML event set: %w", ret))
		}
	}
	if ret := f.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("shut NVML down: %w", ret))
	}
	return errors.Join(errs...)
}
