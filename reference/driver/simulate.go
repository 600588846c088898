package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/emulator/profile"
)

// Simulation defaults.
const (
	DefaultSimulationProfile = "dgx-h100"
	DefaultSimulatedNodes    = 1000
	DefaultSimulatedPrefix   = "drakit-sim-"
	DefaultSimulationTimeout = 10 * time.Minute
	// DefaultSimulationQPS and DefaultSimulationBurst are client-go's
	// defaults, which the reference driver runs with.
	DefaultSimulationQPS   = 5
	DefaultSimulationBurst = 10
	// MaxSimulatedNodes bounds SimulationConfig.Nodes.
	MaxSimulatedNodes = 10000
)

// ErrInvalidSimulationConfig classifies every error returned by
// SimulationConfig.Validate.
var ErrInvalidSimulationConfig = errors.New("invalid simulation configuration")

// SimulationConfig configures Simulate: the driver's ResourceSlice publisher
// run for many simulated nodes at once, against a real API server.
type SimulationConfig struct {
	// DriverName is the DRA driver the slices are published for. Default
	// gpu.drakit.dev.
	DriverName string
	// Profile is every simulated node's hardware: a built-in emulator
	// profile (dgx-h100, mixed-mig) or the path of a profile file. Default
	// dgx-h100.
	Profile string
	// GPUsPerNode, when positive, replicates the profile's GPUs to exactly
	// this many per node (ReplicateProfileGPUs); 0 keeps the profile's GPUs.
	GPUsPerNode int
	// Nodes is how many nodes are simulated, 1 to MaxSimulatedNodes.
	// Default 1000.
	Nodes int
	// NodePrefix names the simulated nodes <NodePrefix><i>, i counting from
	// 0, zero-padded to the width of Nodes-1. No Node of the cluster may have
	// one of these names. Default drakit-sim-.
	NodePrefix string
	// PartitionableAlpha publishes the alpha fields of partitionable
	// devices, as Config.PartitionableAlpha does. Default false.
	PartitionableAlpha bool
	// Keep leaves the published slices in the cluster; otherwise Simulate
	// deletes them through the publishers before it returns. A later run
	// with the same NodePrefix and Nodes takes kept slices over (and,
	// without Keep, deletes them). Default false.
	Keep bool
	// Timeout bounds publishing, and deleting, each. Default 10m.
	Timeout time.Duration
	// Kubeconfig is the path of a kubeconfig file; empty means $KUBECONFIG
	// or ~/.kube/config.
	Kubeconfig string
	// QPS and Burst are the client-side rate limit of each simulated
	// node's publisher, which has its own client as each kubelet plugin
	// does. Defaults 5 and 10 (client-go's, the reference driver's).
	QPS   int
	Burst int
}

// DefaultSimulationConfig returns the defaults: 1000 dgx-h100 nodes of the
// reference driver.
func DefaultSimulationConfig() SimulationConfig {
	return SimulationConfig{
		DriverName: DefaultDriverName,
		Profile:    DefaultSimulationProfile,
		Nodes:      DefaultSimulatedNodes,
		NodePrefix: DefaultSimulatedPrefix,
		Timeout:    DefaultSimulationTimeout,
		QPS:        DefaultSimulationQPS,
		Burst:      DefaultSimulationBurst,
	}
}

// Validate reports the first invalid field by name.
func (c *SimulationConfig) Validate() error {
	if msgs := validation.IsDNS1123Subdomain(c.DriverName); len(msgs) > 0 || len(c.DriverName) > 63 {
		return fmt.Errorf("%w: DriverName %q is not a DNS subdomain of at most 63 characters", ErrInvalidSimulationConfig, c.DriverName)
	}
	if c.Profile == "" {
		return fmt.Errorf("%w: Profile is required", ErrInvalidSimulationConfig)
	}
	if c.GPUsPerNode < 0 {
		return fmt.Errorf("%w: GPUsPerNode %d is negative", ErrInvalidSimulationConfig, c.GPUsPerNode)
	}
	if c.Nodes < 1 || c.Nodes > MaxSimulatedNodes {
		return fmt.Errorf("%w: Nodes %d is not between 1 and %d", ErrInvalidSimulationConfig, c.Nodes, MaxSimulatedNodes)
	}
	// Node and pool names are DNS subdomains; the longest name has the
	// same length as the last one.
	if last := c.nodeName(c.Nodes - 1); len(validation.IsDNS1123Subdomain(last)) > 0 || len(validation.IsDNS1123Subdomain(c.nodeName(0))) > 0 {
		return fmt.Errorf("%w: NodePrefix %q does not make DNS subdomains (e.g. %q)", ErrInvalidSimulationConfig, c.NodePrefix, last)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("%w: Timeout %s is not positive", ErrInvalidSimulationConfig, c.Timeout)
	}
	if c.QPS < 1 || c.Burst < 1 {
		return fmt.Errorf("%w: QPS %d and Burst %d must be positive", ErrInvalidSimulationConfig, c.QPS, c.Burst)
	}
	return nil
}

// nodeName is the name of simulated node i.
func (c *SimulationConfig) nodeName(i int) string {
	width := len(strconv.Itoa(c.Nodes - 1))
	return fmt.Sprintf("%s%0*d", c.NodePrefix, width, i)
}

// SimulationResult is what Simulate measured.
type SimulationResult struct {
	// Nodes is the number of simulated nodes; SlicesPerNode and
	// DevicesPerNode describe each node's pool.
	Nodes, SlicesPerNode, DevicesPerNode int
	// Build is the time to build every node's pool; Start to start the
	// publishers; Publish from handing the pools to the publishers until
	// the API server holds every slice; Delete (zero with Keep) from
	// withdrawing the pools until the API server holds none.
	Build, Start, Publish, Delete time.Duration
	// Stats sums the publishers' API calls.
	Stats resourceslice.Stats
}

// Simulate publishes the pools of cfg.Nodes simulated nodes, each with the
// hardware of cfg.Profile, through the same publisher the kubelet plugin
// uses (k8s.io/dynamic-resource-allocation/resourceslice, one controller per
// node), waits until the API server holds every slice, and (unless
// cfg.Keep) deletes them again. It writes progress and the measured times
// to out.
//
// A simulated node's pool is named after the node and selects it by name
// (spec.nodeSelector matchFields metadata.name), instead of naming it in
// spec.nodeName: the publisher sets nodeName only for slices owned by their
// Node object, and a slice owned by a Node that does not exist is deleted by
// the garbage collector, while Node objects without a kubelet would attract
// DaemonSet pods (the reference driver's DaemonSet tolerates every taint).
// No Node may carry a simulated name; the scheduler never places a pod on a
// simulated node, since none exists.
//
// One difference to real nodes makes the API server work harder: each
// publisher watches the slices of its pool without a node name, and the API
// server's watch cache indexes slices by node name only, so every slice
// event is dispatched to every publisher's watch (real kubelet plugins each
// get only their node's events). With 1000 nodes the API server closes
// watches it cannot feed fast enough and the publishers re-establish them;
// the measured times are an upper bound.
func Simulate(ctx context.Context, cfg SimulationConfig, out io.Writer) (SimulationResult, error) {
	if err := cfg.Validate(); err != nil {
		return SimulationResult{}, err
	}
	newClient, err := simulationClients(cfg)
	if err != nil {
		return SimulationResult{}, err
	}
	return simulate(ctx, cfg, newClient, out)
}

// simulate is Simulate with the clients injected.
func simulate(ctx context.Context, cfg SimulationConfig, newClient func() (kubernetes.Interface, error), out io.Writer) (SimulationResult, error) {
	res := SimulationResult{Nodes: cfg.Nodes}
	start := time.Now()
	inv, err := simulationInventory(cfg)
	if err != nil {
		return res, err
	}
	nodes, err := buildSimulatedNodes(inv, cfg)
	if err != nil {
		return res, err
	}
	res.Build = time.Since(start)
	res.SlicesPerNode, res.DevicesPerNode = poolSize(nodes[0].pool)
	fmt.Fprintf(out, "Built %d pools (%s, %d GPUs: %d slices, %d devices each) in %s\n",
		len(nodes), cfg.Profile, len(inv.GPUs), res.SlicesPerNode, res.DevicesPerNode, res.Build.Round(time.Millisecond))

	start = time.Now()
	sim, err := startSimulation(ctx, newClient, cfg.DriverName, nodes)
	if err != nil {
		return res, err
	}
	defer sim.stop()
	res.Start = time.Since(start)
	fmt.Fprintf(out, "Started %d publishers in %s\n", len(nodes), res.Start.Round(time.Millisecond))

	progress := func(verb string) func(done, total int) {
		return func(done, total int) { fmt.Fprintf(out, "  %d/%d pools %s\n", done, total, verb) }
	}
	publishCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start = time.Now()
	err = sim.publish(publishCtx, progress("published"))
	res.Publish = time.Since(start)
	if err == nil {
		fmt.Fprintf(out, "Published %d slices with %d devices for %d nodes in %s\n",
			len(nodes)*res.SlicesPerNode, len(nodes)*res.DevicesPerNode, len(nodes), res.Publish.Round(time.Millisecond))
	}
	var delErr error
	switch {
	case !cfg.Keep:
		// Clean up even when publishing failed or ctx was canceled.
		deleteCtx, cancelDelete := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		defer cancelDelete()
		start = time.Now()
		delErr = sim.unpublish(deleteCtx, progress("deleted"))
		res.Delete = time.Since(start)
		if delErr != nil {
			delErr = fmt.Errorf("%w (a later run for the same nodes deletes what is left)", delErr)
		} else {
			fmt.Fprintf(out, "Deleted the simulated slices in %s\n", res.Delete.Round(time.Millisecond))
		}
	case err == nil:
		fmt.Fprintf(out, "Kept the slices; a later run for the same nodes without keeping them deletes them\n")
	}
	// A publisher counts an API call once it returned: stopped, all are.
	sim.stop()
	res.Stats = sim.stats()
	fmt.Fprintf(out, "Publisher API calls: %d creates, %d updates, %d deletes\n", res.Stats.NumCreates, res.Stats.NumUpdates, res.Stats.NumDeletes)
	return res, errors.Join(err, delErr)
}

// simulationInventory is the inventory of one simulated node: the profile,
// replicated to cfg.GPUsPerNode GPUs when that is set.
func simulationInventory(cfg SimulationConfig) (*Inventory, error) {
	p, err := profile.Load(cfg.Profile)
	if err != nil {
		return nil, fmt.Errorf("load node profile: %w", err)
	}
	if cfg.GPUsPerNode > 0 {
		if p, err = ReplicateProfileGPUs(p, cfg.GPUsPerNode); err != nil {
			return nil, err
		}
	}
	return ProfileInventory(p)
}

// simulationClients loads the kubeconfig and returns a constructor of
// clients with their own rate limit of cfg.QPS and cfg.Burst; they share
// their connections.
func simulationClients(cfg SimulationConfig) (func() (kubernetes.Interface, error), error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", cfg.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = float32(cfg.QPS), cfg.Burst
	return func() (kubernetes.Interface, error) {
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("create Kubernetes client: %w", err)
		}
		return client, nil
	}, nil
}

// simulatedNode is one simulated node and the pool its driver publishes.
type simulatedNode struct {
	name string
	pool resourceslice.Pool
}

// buildSimulatedNodes builds every simulated node's pool from the template
// inventory: each node's GPUs get the UUIDs the emulator derives with the
// node's name as uuidSeed (nodeInventory), the pool is built as the driver
// builds it and selects its node by name.
func buildSimulatedNodes(template *Inventory, cfg SimulationConfig) ([]simulatedNode, error) {
	nodes := make([]simulatedNode, cfg.Nodes)
	for i := range nodes {
		name := cfg.nodeName(i)
		inv, err := template.nodeInventory(name)
		if err != nil {
			return nil, err
		}
		res, err := buildResources(name, inv, publishOptions{DriverName: cfg.DriverName, PartitionAlpha: cfg.PartitionableAlpha})
		if err != nil {
			return nil, fmt.Errorf("build pool of simulated node %s: %w", name, err)
		}
		pool := res.Pools[name]
		pool.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{name}}},
		}}}
		nodes[i] = simulatedNode{name: name, pool: pool}
	}
	return nodes, nil
}

// nodeInventory copies the inventory for the node called seed: GPU UUIDs
// derived from seed and the GPU's PCI address (profile.DeriveUUID), MIG
// device UUIDs from those (profile.DeriveMIGUUID).
func (inv *Inventory) nodeInventory(seed string) (*Inventory, error) {
	out := *inv
	out.GPUs = make([]GPU, len(inv.GPUs))
	for i, g := range inv.GPUs {
		var a profile.Address
		if _, err := fmt.Sscanf(g.PCIBusID, "%x:%x:%x.%x", &a.Domain, &a.Bus, &a.Device, &a.Function); err != nil || a.String() != g.PCIBusID {
			return nil, fmt.Errorf("GPU %d: PCI bus id %q is not DOMAIN:BB:DD.F", g.Index, g.PCIBusID)
		}
		g.UUID = profile.DeriveUUID(seed, a)
		if g.MIG != nil {
			mig := *g.MIG
			mig.Instances = make([]MIGInstance, len(g.MIG.Instances))
			for j, inst := range g.MIG.Instances {
				inst.UUID = profile.DeriveMIGUUID(g.UUID, inst.GI, inst.CI)
				mig.Instances[j] = inst
			}
			g.MIG = &mig
		}
		out.GPUs[i] = g
	}
	return &out, nil
}

// poolSize counts a pool's slices and devices.
func poolSize(p resourceslice.Pool) (slices, devices int) {
	for _, s := range p.Slices {
		devices += len(s.Devices)
	}
	return len(p.Slices), devices
}

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
	pools := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		pools[n.name] = true
	}
	for _, n := range existing.Items {
		if pools[n.Name] {
			return nil, fmt.Errorf("node %s exists: simulated node names must not name real nodes (choose another prefix)", n.Name)
		}
	}

	s := &simulation{nodes: nodes, fatal: make(chan error, 1), ctrls: make([]*resourceslice.Controller, len(nodes))}
	watchCtx, stopWatch := context.WithCancel(ctx)
	s.stopWatch = stopWatch
	if s.observer, err = watchSlices(watchCtx, client, driverName, pools); err != nil {
		stopWatch()
		return nil, err
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
				DriverName:            driverName,
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
	want := make(map[string]*resourceslice.Pool, len(s.nodes))
	for i := range s.nodes {
		want[s.nodes[i].name] = &s.nodes[i].pool
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
	pools   map[string]*observedPool // simulated pools only
	done    int                      // pools as wanted
	changed chan struct{}            // closed and replaced on every change of done
}

type observedPool struct {
	// want is the pool the API server should hold; nil: no slices.
	want   *resourceslice.Pool
	slices map[string]*resourceapi.ResourceSlice // by name
	done   bool
}

// watchSlices starts watching the driver's slices and returns once the
// initial list is in.
func watchSlices(ctx context.Context, client kubernetes.Interface, driverName string, pools map[string]bool) (*sliceObserver, error) {
	o := &sliceObserver{pools: make(map[string]*observedPool, len(pools)), changed: make(chan struct{})}
	for name := range pools {
		o.pools[name] = &observedPool{slices: map[string]*resourceapi.ResourceSlice{}, done: true}
	}
	o.done = len(pools)
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
		return nil, fmt.Errorf("watch ResourceSlices of driver %s: %w", driverName, context.Cause(ctx))
	}
	return o, nil
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
	p, ok := o.pools[slice.Spec.Pool.Name]
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
func (o *sliceObserver) expect(want map[string]*resourceslice.Pool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, p := range o.pools {
		p.want = want[name]
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
