package pluginharness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// countingPublisher records the pools handed to it; its second call fails.
type countingPublisher struct {
	mu    sync.Mutex
	pools []resourceslice.DriverResources
}

func (c *countingPublisher) PublishResources(_ context.Context, r resourceslice.DriverResources) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pools = append(c.pools, r)
	if len(c.pools) == 2 {
		return errors.New("no NodeName was set to publish resources")
	}
	return nil
}

func (c *countingPublisher) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pools)
}

func (c *countingPublisher) last() resourceslice.DriverResources {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pools[len(c.pools)-1]
}

// staticServed is a Served without Updated: a driver's own plugin that
// never changes its pool.
type staticServed struct {
	kubeletplugin.DRAPlugin
	res resourceslice.DriverResources
}

func (s staticServed) Resources() resourceslice.DriverResources { return s.res }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPublishUntilDoneRepublishes: the pool is handed over again every
// interval, an error does not stop it, and it returns when ctx ends.
func TestPublishUntilDoneRepublishes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	pub := &countingPublisher{}
	done := make(chan struct{})
	go func() {
		publishUntilDone(ctx, pub, staticServed{}, time.Millisecond)
		close(done)
	}()
	waitFor(t, "4 publish calls", func() bool { return pub.count() >= 4 })
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("publishUntilDone did not return 30s after cancel")
	}
}

// TestPublishUntilDoneOnUpdate: without a republish interval, each Update
// of the plugin is published, with the updated pool.
func TestPublishUntilDoneOnUpdate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	p := &Plugin[PreparedDevice, *PreparedDevice]{cfg: Config{NodeName: "n"}, updated: make(chan struct{}, 1),
		published: map[string]bool{}, withdrawn: map[string]bool{}}
	pub := &countingPublisher{}
	go publishUntilDone(ctx, pub, p, 0)
	pool := func(devices ...string) resourceslice.DriverResources {
		var devs []resourceapi.Device
		for _, d := range devices {
			devs = append(devs, resourceapi.Device{Name: d})
		}
		return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{"n": {Slices: []resourceslice.Slice{{Devices: devs}}}}}
	}
	time.Sleep(10 * time.Millisecond)
	if n := pub.count(); n != 0 {
		t.Fatalf("%d publish calls before any update, want 0", n)
	}
	p.Update(pool("a", "b"))
	waitFor(t, "the first update published", func() bool { return pub.count() == 1 })
	p.Update(pool("a")) // the publisher fails this one; the loop goes on
	waitFor(t, "the second update published", func() bool { return pub.count() == 2 })
	p.Update(pool("a", "c"))
	waitFor(t, "the third update published", func() bool { return pub.count() == 3 })
	devs := pub.last().Pools["n"].Slices[0].Devices
	if len(devs) != 2 || devs[1].Name != "c" {
		t.Errorf("published %v, want devices a and c", devs)
	}
}
