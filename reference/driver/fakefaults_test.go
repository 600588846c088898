package driver

import (
	"context"
	"sync"
	"time"
)

// fakeFaults is a faultSource whose events and GPU states the test sets.
type fakeFaults struct {
	events chan faultEvent
	mu     sync.Mutex
	state  map[string]gpuFaults // by UUID; missing: healthy
	closed bool
}

func newFakeFaults() *fakeFaults {
	return &fakeFaults{events: make(chan faultEvent, 16), state: map[string]gpuFaults{}}
}

// opener is run's faults argument over f.
func (f *fakeFaults) opener() func([]GPU) (faultSource, error) {
	return func([]GPU) (faultSource, error) { return f, nil }
}

func (f *fakeFaults) set(uuid string, s gpuFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[uuid] = s
}

func (f *fakeFaults) Wait(ctx context.Context, timeout time.Duration) (faultEvent, bool, error) {
	select {
	case ev := <-f.events:
		return ev, true, nil
	case <-ctx.Done():
	case <-time.After(timeout):
	}
	return faultEvent{}, false, nil
}

func (f *fakeFaults) Faults(uuid string) (gpuFaults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state[uuid], nil
}

func (f *fakeFaults) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
