package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/reference/driver"
)

// Run publishes the pools of cfg.Nodes simulated nodes, each with the
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
func Run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	newClient, err := clients(cfg)
	if err != nil {
		return Result{}, err
	}
	return run(ctx, cfg, newClient, out)
}

// run is Run with the clients injected.
func run(ctx context.Context, cfg Config, newClient func() (kubernetes.Interface, error), out io.Writer) (Result, error) {
	res := Result{Nodes: cfg.Nodes}
	start := time.Now()
	var nodes []simulatedNode
	if cfg.ClusterProfile != "" {
		c, err := LoadCluster(cfg.ClusterProfile)
		if err != nil {
			return res, err
		}
		if nodes, err = clusterPools(ctx, c, cfg.DriverName, cfg.PartitionableAlpha); err != nil {
			return res, fmt.Errorf("build pools of cluster profile %s: %w", cfg.ClusterProfile, err)
		}
		res.Nodes = len(c.Nodes)
	} else {
		inv, err := templateInventory(cfg)
		if err != nil {
			return res, err
		}
		if nodes, err = buildNodes(ctx, inv, cfg); err != nil {
			return res, err
		}
	}
	res.Build = time.Since(start)
	res.SlicesPerNode, res.DevicesPerNode = poolSize(nodes[0].pool)
	res.Pools = len(nodes)
	for _, n := range nodes {
		s, d := poolSize(n.pool)
		res.Slices += s
		res.Devices += d
	}
	source := cfg.Profile
	if cfg.ClusterProfile != "" {
		source = "cluster profile " + cfg.ClusterProfile
	}
	fmt.Fprintf(out, "Built %d pools for %d nodes (%s: %d slices, %d devices) in %s\n",
		res.Pools, res.Nodes, source, res.Slices, res.Devices, res.Build.Round(time.Millisecond))

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
			res.Slices, res.Devices, res.Nodes, res.Publish.Round(time.Millisecond))
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

// templateInventory is the hardware of every simulated node: the profile,
// replicated to cfg.GPUsPerNode GPUs when that is set.
func templateInventory(cfg Config) (*driver.Inventory, error) {
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

// restConfig loads the kubeconfig as kubectl would with cfg.KubeContext as
// --context and cfg.RequestTimeout as --request-timeout.
func restConfig(cfg Config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.KubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", cfg.Kubeconfig, err)
	}
	rc.Timeout = cfg.RequestTimeout
	return rc, nil
}

// clients loads the kubeconfig and returns a constructor of
// clients with their own rate limit of cfg.QPS and cfg.Burst; they share
// their connections.
func clients(cfg Config) (func() (kubernetes.Interface, error), error) {
	rc, err := restConfig(cfg)
	if err != nil {
		return nil, err
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

// simulatedNode is one pool a simulated driver publishes: a simulated
// node's own pool, or (with a cluster profile) a cluster-level pool such as
// a clique's IMEX channels or a TPU slice's sub-slices.
type simulatedNode struct {
	// name is the pool's name: the node's name for a node's own pool.
	name string
	// driver publishes the pool; empty: the simulation's driver
	// (Config.DriverName).
	driver string
	// clusterLevel marks a pool no node owns; name is then no node name.
	clusterLevel bool
	pool         resourceslice.Pool
}

// buildNodes builds every simulated node's pool as the driver publishes
// it (driver.NodeResources) over the node's Discoverer, selecting its node
// by name.
func buildNodes(ctx context.Context, template *driver.Inventory, cfg Config) ([]simulatedNode, error) {
	nodes := make([]simulatedNode, cfg.Nodes)
	for i := range nodes {
		name := cfg.nodeName(i)
		res, err := driver.NodeResources(ctx, nodeDiscoverer{template: template, node: name}, cfg.DriverName, name, cfg.PartitionableAlpha)
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

// nodeDiscoverer is a simulated node's driver.Discoverer: the template's
// hardware with the UUIDs the emulator gives it on a node of this name,
// GPU UUIDs derived from the node's name (the emulator's uuidSeed) and the
// GPU's PCI address (gpu.DeriveUUID), MIG device UUIDs from those
// (gpu.DeriveMIGUUID).
type nodeDiscoverer struct {
	template *driver.Inventory
	node     string
}

func (d nodeDiscoverer) Discover(context.Context) (*driver.Inventory, error) {
	out := *d.template
	out.GPUs = make([]driver.GPU, len(d.template.GPUs))
	for i, g := range d.template.GPUs {
		var a platform.Address
		if _, err := fmt.Sscanf(g.PCIBusID, "%x:%x:%x.%x", &a.Domain, &a.Bus, &a.Device, &a.Function); err != nil || a.String() != g.PCIBusID {
			return nil, fmt.Errorf("GPU %d: PCI bus id %q is not DOMAIN:BB:DD.F", g.Index, g.PCIBusID)
		}
		g.UUID = gpu.DeriveUUID(d.node, a)
		if g.MIG != nil {
			mig := *g.MIG
			mig.Instances = make([]driver.MIGInstance, len(g.MIG.Instances))
			for j, inst := range g.MIG.Instances {
				inst.UUID = gpu.DeriveMIGUUID(g.UUID, inst.GI, inst.CI)
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
