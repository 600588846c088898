package nvml_test

import (
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
)

// TestDeviceQueriesOfMIGDevices checks the device queries on a MIG device
// handle: the GPU's addressing mode and bus type, no processes, and
// NOT_SUPPORTED for the whole-GPU settings (compute mode, events).
func TestDeviceQueriesOfMIGDevices(t *testing.T) {
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewMIGRoot(t, nvmltest.MIGSampleState()))
	gpu, ret := lib.DeviceGetHandleByIndex(1)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	mig, ret := gpu.GetMigDeviceHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GetMigDeviceHandleByIndex(0): %v", ret)
	}
	if mode, ret := mig.GetAddressingMode(); ret != gonvml.SUCCESS || mode.Value != uint32(gonvml.DEVICE_ADDRESSING_MODE_HMM) {
		t.Errorf("MIG device GetAddressingMode = %+v, %v; want HMM", mode, ret)
	}
	if bus, ret := mig.GetBusType(); ret != gonvml.SUCCESS || bus != gonvml.BUS_TYPE_PCIE {
		t.Errorf("MIG device GetBusType = %v, %v; want PCIe", bus, ret)
	}
	if procs, ret := mig.GetComputeRunningProcesses(); ret != gonvml.SUCCESS || len(procs) != 0 {
		t.Errorf("MIG device GetComputeRunningProcesses = %v, %v; want none", procs, ret)
	}
	if _, ret := mig.GetComputeMode(); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("MIG device GetComputeMode: %v, want NOT_SUPPORTED (a GPU setting)", ret)
	}
	migEvents := uint64(gonvml.EventTypeXidCriticalError | gonvml.EventTypeSingleBitEccError | gonvml.EventTypeDoubleBitEccError)
	if types, ret := mig.GetSupportedEventTypes(); ret != gonvml.SUCCESS || types != migEvents {
		t.Errorf("MIG device GetSupportedEventTypes = %#x, %v; want %#x (Xid and ECC errors)", types, ret, migEvents)
	}
	l4, _ := lib.DeviceGetHandleByIndex(2) // not MIG capable: no MIG configuration events
	if types, ret := l4.GetSupportedEventTypes(); ret != gonvml.SUCCESS || types != wantEvents(false) {
		t.Errorf("L4 GetSupportedEventTypes = %#x, %v; want %#x", types, ret, wantEvents(false))
	}
}

// TestEventSetAsAHealthMonitorUsesIt follows NVIDIA's DRA driver's health
// monitor: create a set, register the supported XID and ECC events of every
// GPU, wait in a loop. A wait times out after its timeout without holding
// up other calls; the set table is bounded and reusable.
func TestEventSetAsAHealthMonitorUsesIt(t *testing.T) {
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewRoot(t, nvmltest.SampleState()))
	set, ret := lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		t.Fatalf("EventSetCreate: %v", ret)
	}
	n, _ := lib.DeviceGetCount()
	mask := uint64(gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError | gonvml.EventTypeSingleBitEccError)
	for i := range n {
		d, _ := lib.DeviceGetHandleByIndex(i)
		supported, ret := d.GetSupportedEventTypes()
		if ret != gonvml.SUCCESS {
			t.Fatalf("GPU %d GetSupportedEventTypes: %v", i, ret)
		}
		if ret := d.RegisterEvents(mask&supported, set); ret != gonvml.SUCCESS {
			t.Errorf("GPU %d RegisterEvents: %v", i, ret)
		}
	}
	const timeout = 300 * time.Millisecond
	type result struct {
		ret     gonvml.Return
		elapsed time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, ret := set.Wait(uint32(timeout / time.Millisecond))
		done <- result{ret, time.Since(start)}
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if _, ret := lib.DeviceGetCount(); ret != gonvml.SUCCESS || time.Since(start) > timeout/2 {
		t.Errorf("DeviceGetCount during a wait: %v after %v; a wait must not hold the library", ret, time.Since(start))
	}
	r := <-done
	if r.ret != gonvml.ERROR_TIMEOUT || r.elapsed < timeout {
		t.Errorf("Wait(%v) = %v after %v; want ERROR_TIMEOUT after the timeout", timeout, r.ret, r.elapsed)
	}
	if ret := set.Free(); ret != gonvml.SUCCESS {
		t.Errorf("Free: %v", ret)
	}
	if ret := set.Free(); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("second Free: %v, want INVALID_ARGUMENT", ret)
	}

	// The table holds 64 sets; freed ones are reused.
	var sets []gonvml.EventSet
	for {
		s, ret := lib.EventSetCreate()
		if ret != gonvml.SUCCESS {
			if ret != gonvml.ERROR_MEMORY || len(sets) != 64 {
				t.Errorf("EventSetCreate number %d: %v; want ERROR_MEMORY after 64", len(sets)+1, ret)
			}
			break
		}
		sets = append(sets, s)
		if len(sets) > 64 {
			t.Fatal("more than 64 event sets")
		}
	}
	for _, s := range sets {
		if ret := s.Free(); ret != gonvml.SUCCESS {
			t.Errorf("Free: %v", ret)
		}
	}
	if s, ret := lib.EventSetCreate(); ret != gonvml.SUCCESS {
		t.Errorf("EventSetCreate after freeing all: %v", ret)
	} else {
		s.Free()
	}
}
