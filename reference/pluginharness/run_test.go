package pluginharness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

type countingPublisher struct {
	mu    sync.Mutex
	calls int
}

func (c *countingPublisher) PublishResources(context.Context, resourceslice.DriverResources) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == 2 {
		return errors.New("no NodeName was set to publish resources")
	}
	return nil
}

func (c *countingPublisher) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestRepublishUntilDone: the pool is handed over again every interval, an
// error does not stop it, and it returns when ctx ends.
func TestRepublishUntilDone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	pub := &countingPublisher{}
	done := make(chan struct{})
	go func() {
		republishUntilDone(ctx, pub, resourceslice.DriverResources{}, time.Millisecond)
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for pub.count() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in 30s, want 4", pub.count())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("republishUntilDone did not return 30s after cancel")
	}
}
