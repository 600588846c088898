package conformance

import (
	"context"

	"drakit.dev/drakit/emulator/fault"
)

// emulatorFaults injects faults through the emulator's fault library into
// the node's emulator root, as `drakit emulator fault` does: the emulated
// GPU's NVML state changes and its event reaches every NVML client.
type emulatorFaults struct{ root string }

func (e emulatorFaults) InjectXid(_ context.Context, gpu string, xid uint64) error {
	_, err := fault.InjectXid(e.root, gpu, fault.XidRequest{Code: xid})
	return err
}

func (e emulatorFaults) Reset(_ context.Context, gpu string) error {
	return fault.Reset(e.root, gpu)
}
