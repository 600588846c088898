package simulate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// simulation runs one publisher (resourceslice controller) per simulated
// node and a watch that tells when the API server holds what they publish.
type simulation struct {
	nodes     []simulatedNode
	observer  *sliceObserver
	stopWatch context.CancelFunc
	ctrls     []*resourceslice.Controller

	fatal     chan error // buffered; the first fatal publisher error
	lastError atomic.Pointer[error]
}

// startSimulation checks that no Node has a simulated node's name, starts
// the watch and one publisher per node, each with a client of its own from
// newClient, publishing nothing yet. Each publisher reconciles only its
// node's pool (ReconcilePoolWithName), so the publishers never touch each
// other's slices or those of real nodes. The publishers log one level less
// verbosely than ctx's logger (their watches' restarts are expected); their
// errors are logged.
func startSimulation(ctx context.Context, newClient func() (kubernetes.Interface, error), driverName string, nodes []simulatedNode) (*simulation, error) {
	logger := klog.FromContext(ctx)
	client, err := newClient()
	if err != nil {
		return nil, err
	}
	existing, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	simulated := make(map[string]bool, len(nodes))
	pools := make(map[poolKey]bool, len(nodes))
	drivers := map[string]bool{}
	for i := range nodes {
		if nodes[i].driver == "" {
			nodes[i].driver = driverName
		}
		if !nodes[i].clusterLevel {
			simulated[nodes[i].name] = true
		}
		pools[nodes[i].key()] = true
		drivers[nodes[i].driver] = true
	}
	for _, n := range existing.Items {
		if simulated[n.Name] {
			return nil, fmt.Errorf("node %s exists: simulated node names must not name real nodes (choose another prefix)", n.Name)
		}
	}

	s := &simulation{nodes: nodes, fatal: make(chan error, 1), ctrls: make([]*resourceslice.Controller, len(nodes))}
	watchCtx, stopWatch := context.WithCancel(ctx)
	s.stopWatch = stopWatch
	s.observer = newSliceObserver(pools)
	for _, d := range slices.Sorted(maps.Keys(drivers)) {
		if err := s.observer.watch(watchCtx, client, d); err != nil {
			stopWatch()
			return nil, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			nodeClient, err := newClient()
			if err != nil {
				errs[i] = err
				return
			}
			nodeCtx := klog.NewContext(ctx, klog.LoggerWithValues(logger, "simulatedNode", n.name).V(1))
			s.ctrls[i], errs[i] = resourceslice.StartController(nodeCtx, resourceslice.Options{
				DriverName:            n.driver,
				KubeClient:            nodeClient,
				ReconcilePoolWithName: n.name,
				ErrorHandler:          s.handleError,
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.stop()
		return nil, fmt.Errorf("start publishers: %w", err)
	}
	return s, nil
}

// handleError is the publishers' error handler: fields the API server
// dropped (a disabled feature gate) end the simulation; anything else is
// logged and retried by the publisher.
func (s *simulation) handleError(ctx context.Context, err error, msg string) {
	var dropped *resourceslice.DroppedFieldsError
	if errors.As(err, &dropped) {
		select {
		case s.fatal <- fmt.Errorf("%s: %w", msg, err):
		default:
		}
		return
	}
	s.lastError.Store(&err)
	klog.FromContext(ctx).Error(err, msg)
}

// publish hands every node's pool to its publisher and waits until the API
// server holds exactly those slices.
func (s *simulation) publish(ctx context.Context, progress func(done, total int)) error {
	want := make(map[poolKey]*resourceslice.Pool, len(s.nodes))
	for i := range s.nodes {
		want[s.nodes[i].key()] = &s.nodes[i].pool
	}
	s.observer.expect(want)
	for i, n := range s.nodes {
		s.ctrls[i].Update(&resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{n.name: n.pool}})
	}
	if err := s.wait(ctx, progress); err != nil {
		return fmt.Errorf("publish simulated pools: %w", err)
	}
	return nil
}

// unpublish withdraws every pool and waits until the API server holds no
// slice of a simulated node.
func (s *simulation) unpublish(ctx context.Context, progress func(done, total int)) error {
	s.observer.expect(nil)
	for _, c := range s.ctrls {
		c.Update(&resourceslice.DriverResources{})
	}
	if err := s.wait(ctx, progress); err != nil {
		return fmt.Errorf("delete simulated pools: %w", err)
	}
	return nil
}

// progressInterval is how often wait reports progress.
const progressInterval = 2 * time.Second

func (s *simulation) wait(ctx context.Context, progress func(done, total int)) error {
	ticker := time.NewTicker(progressInterval)
	defer ticker.Stop()
	for {
		done, total, changed := s.observer.state()
		if done == total {
			return nil
		}
		select {
		case <-changed:
		case <-ticker.C:
			progress(done, total)
		case err := <-s.fatal:
			return err
		case <-ctx.Done():
			err := fmt.Errorf("%d of %d pools done: %w", done, total, context.Cause(ctx))
			if last := s.lastError.Load(); last != nil {
				err = fmt.Errorf("%w (last publisher error: %w)", err, *last)
			}
			return err
		}
	}
}

// stats sums the publishers' API calls.
func (s *simulation) stats() resourceslice.Stats {
	var sum resourceslice.Stats
	for _, c := range s.ctrls {
		if c == nil {
			continue
		}
		st := c.GetStats()
		sum.NumCreates += st.NumCreates
		sum.NumUpdates += st.NumUpdates
		sum.NumDeletes += st.NumDeletes
	}
	return sum
}

// stop stops the publishers (leaving their slices) and the watch; it may be
// called again.
func (s *simulation) stop() {
	var wg sync.WaitGroup
	for _, c := range s.ctrls {
		wg.Go(c.Stop) // Stop of a nil controller is a no-op
	}
	wg.Wait()
	s.stopWatch()
}

// sliceObserver follows the driver's ResourceSlices through a watch and
// tells when every simulated pool is exactly as wanted.
type sliceObserver struct {
	mu      sync.Mutex
	pools   map[poolKey]*observedPool // simulated pools only
	done    int                       // pools as wanted
	changed chan struct{}             // closed and replaced on every change of done
}

type observedPool struct {
	// want is the pool the API server should hold; nil: no slices.
	want   *resourceslice.Pool
	slices map[string]*resourceapi.ResourceSlice // by name
	done   bool
}

// poolKey identifies a pool: its driver and name.
type poolKey struct{ driver, pool string }

func (n *simulatedNode) key() poolKey { return poolKey{n.driver, n.name} }

// newSliceObserver observes pools, which start out wanting no slices.
func newSliceObserver(pools map[poolKey]bool) *sliceObserver {
	o := &sliceObserver{pools: make(map[poolKey]*observedPool, len(pools)), changed: make(chan struct{})}
	for k := range pools {
		o.pools[k] = &observedPool{slices: map[string]*resourceapi.ResourceSlice{}, done: true}
	}
	o.done = len(pools)
	return o
}

// watch starts watching the driver's slices and returns once the initial
// list is in.
func (o *sliceObserver) watch(ctx context.Context, client kubernetes.Interface, driverName string) error {
	selector := fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, driverName).String()
	slices := client.ResourceV1().ResourceSlices()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return slices.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return slices.Watch(ctx, opts)
		},
	}
	logger := klog.FromContext(ctx)
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		Logger:        &logger,
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    &resourceapi.ResourceSlice{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { o.observe(obj, false) },
			UpdateFunc: func(_, obj any) { o.observe(obj, false) },
			DeleteFunc: func(obj any) { o.observe(obj, true) },
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watch ResourceSlices of driver %s: %w", driverName, context.Cause(ctx))
	}
	return nil
}

func (o *sliceObserver) observe(obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	slice, ok := obj.(*resourceapi.ResourceSlice)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.pools[poolKey{slice.Spec.Driver, slice.Spec.Pool.Name}]
	if !ok {
		return
	}
	if deleted {
		delete(p.slices, slice.Name)
	} else {
		p.slices[slice.Name] = slice
	}
	o.update(p)
}

// expect sets the wanted pools; a pool missing from want (or a nil want)
// should have no slices.
func (o *sliceObserver) expect(want map[poolKey]*resourceslice.Pool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, p := range o.pools {
		p.want = want[k]
		o.update(p)
	}
}

// update recomputes whether p is as wanted; o.mu is held.
func (o *sliceObserver) update(p *observedPool) {
	done := p.matches()
	if done == p.done {
		return
	}
	p.done = done
	if done {
		o.done++
	} else {
		o.done--
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// state returns how many pools are as wanted, out of how many, and a
// channel closed on the next change.
func (o *sliceObserver) state() (done, total int, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done, len(o.pools), o.changed
}

// matches reports whether the API server holds exactly the wanted pool: one
// slice per wanted slice, all of one generation, each with the devices and
// counter sets of the wanted slice its name's index prefix designates (the
// publisher names slices <index>-<driver>-…).
func (p *observedPool) matches() bool {
	if p.want == nil {
		return len(p.slices) == 0
	}
	if len(p.slices) != len(p.want.Slices) {
		return false
	}
	var generation int64 = -1
	seen := make([]bool, len(p.want.Slices))
	for name, s := range p.slices {
		prefix, _, _ := strings.Cut(name, "-")
		i, err := strconv.ParseInt(prefix, 16, 0)
		if err != nil || i < 0 || int(i) >= len(seen) || seen[i] {
			return false
		}
		seen[i] = true
		if generation >= 0 && s.Spec.Pool.Generation != generation {
			return false
		}
		generation = s.Spec.Pool.Generation
		w := p.want.Slices[i]
		if s.Spec.Pool.ResourceSliceCount != int64(len(p.want.Slices)) ||
			!resourceslice.DevicesDeepEqual(s.Spec.Devices, w.Devices) ||
			!apiequality.Semantic.DeepEqual(s.Spec.SharedCounters, w.SharedCounters) {
			return false
		}
	}
	return true
}
