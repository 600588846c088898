package simulate

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/emulator/clusterprofile"
	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/reference/driver"
)

// Names of the fabric contract (what the drivers publish, the kit and the
// benchmarks rely on).
const (
	// TPUDriverName publishes TPU chips and sub-slices.
	TPUDriverName = "tpu.drakit.dev"
	// AttrNVLinkClusterUUID and AttrNVLinkClique are set on every GPU device
	// of a node whose GPUs completed their fabric registration:
	// the domain's UUID and "<clusterUUID>.<cliqueID>".
	AttrNVLinkClusterUUID = "nvlinkClusterUUID"
	AttrNVLinkClique      = "nvlinkClique"
	// DeviceTypeIMEXChannel and DeviceTypeSubslice are the type attributes
	// of IMEX channels (GPU driver) and TPU sub-slices (TPU driver).
	DeviceTypeIMEXChannel = "imex-channel"
	DeviceTypeSubslice    = "subslice"
	// fabricStateCompleted is nvlink.Domain.State once the GPU's fabric
	// registration completed; empty means the same (its default).
	fabricStateCompleted = "completed"
	// hostCounterSet is the sub-slice pool's counter set prefix: one
	// counter per host of the slice, value 1.
	hostCounterSet = "hosts"
)

// IMEXPoolName is the pool of a clique's IMEX channels:
// imex-<cliqueID>-<first 8 characters of the cluster UUID>.
func IMEXPoolName(clusterUUID string, cliqueID uint32) string {
	return fmt.Sprintf("imex-%d-%s", cliqueID, clusterUUID[:8])
}

// SubslicePoolName is the pool of a TPU slice's sub-slices: slice-<name>.
func SubslicePoolName(slice string) string { return "slice-" + slice }

// clusterPools returns every pool the reference drivers publish for the
// nodes of c, in this order: per node (in c's order) the GPU driver's pool
// (nodes with GPUs; with the fabric attributes for a node of a clique) and
// the TPU driver's pool (hosts); then per clique the IMEX channel pool, and
// per TPU slice the sub-slice pool. gpuDriver names the GPU driver.
func clusterPools(ctx context.Context, c *clusterprofile.Cluster, gpuDriver string, partitionableAlpha bool) ([]simulatedNode, error) {
	var out []simulatedNode
	for i := range c.Nodes {
		n := &c.Nodes[i]
		p := n.Profile
		if len(p.Spec.GPUs) > 0 {
			inv, err := ProfileInventory(p)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
			res, err := driver.NodeResources(ctx, nodeDiscoverer{template: inv, node: n.Name}, gpuDriver, n.Name, partitionableAlpha)
			if err != nil {
				return nil, fmt.Errorf("build GPU pool of node %s: %w", n.Name, err)
			}
			pool := res.Pools[n.Name]
			if nv := p.Spec.NVLink; nv != nil && nv.Domain != nil && fabricCompleted(nv.Domain) {
				addFabricAttributes(&pool, nv.Domain)
			}
			pool.NodeSelector = nodeNameSelector(n.Name)
			out = append(out, simulatedNode{name: n.Name, driver: gpuDriver, pool: pool})
		}
		if p.Spec.TPU != nil {
			pool, err := chipPool(n)
			if err != nil {
				return nil, err
			}
			out = append(out, simulatedNode{name: n.Name, driver: TPUDriverName, pool: pool})
		}
	}
	for _, cl := range c.Cliques {
		channels := -1
		for _, name := range cl.Nodes {
			n, _ := c.Node(name)
			if channels < 0 || n.Profile.Spec.NVLink.IMEXChannels < channels {
				channels = n.Profile.Spec.NVLink.IMEXChannels
			}
		}
		if channels <= 0 {
			continue
		}
		out = append(out, simulatedNode{name: IMEXPoolName(cl.ClusterUUID, cl.ID), driver: gpuDriver, clusterLevel: true,
			pool: imexPool(cl, channels)})
	}
	for _, s := range c.Slices {
		pool, err := subslicePool(s)
		if err != nil {
			return nil, err
		}
		out = append(out, simulatedNode{name: SubslicePoolName(s.Name), driver: TPUDriverName, clusterLevel: true, pool: pool})
	}
	return out, nil
}

func fabricCompleted(d *nvlink.Domain) bool {
	return d.State == "" || d.State == fabricStateCompleted
}

// addFabricAttributes sets nvlinkClusterUUID and nvlinkClique on every
// device of the pool (the node's GPUs and their MIG devices).
func addFabricAttributes(pool *resourceslice.Pool, d *nvlink.Domain) {
	clique := fmt.Sprintf("%s.%d", d.ClusterUUID, d.CliqueID)
	for i := range pool.Slices {
		for j := range pool.Slices[i].Devices {
			dev := &pool.Slices[i].Devices[j]
			dev.Attributes[AttrNVLinkClusterUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.ClusterUUID)}
			dev.Attributes[AttrNVLinkClique] = resourceapi.DeviceAttribute{StringValue: ptr.To(clique)}
		}
	}
}

// nodeNameSelector selects the named nodes in one term, as a ResourceSlice
// and a device require: one node by metadata.name (matchFields takes one
// value only), several by their kubernetes.io/hostname label, which the
// kubelet sets to the node's name.
func nodeNameSelector(names ...string) *corev1.NodeSelector {
	if len(names) == 1 {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: names}},
		}}}
	}
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: names}},
	}}}
}

// imexPool is a clique's IMEX channels channel-0 … channel-(n-1), in slices
// of at most ResourceSliceMaxDevices, selecting exactly the clique's nodes.
func imexPool(cl clusterprofile.ResolvedClique, channels int) resourceslice.Pool {
	identity := cl.Identity()
	devices := make([]resourceapi.Device, channels)
	for i := range devices {
		devices[i] = resourceapi.Device{
			Name: fmt.Sprintf("channel-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type":           {StringValue: ptr.To(DeviceTypeIMEXChannel)},
				"channel":        {IntValue: ptr.To(int64(i))},
				AttrNVLinkClique: {StringValue: ptr.To(identity)},
			},
		}
	}
	pool := resourceslice.Pool{NodeSelector: nodeNameSelector(slices.Clone(cl.Nodes)...)}
	for chunk := range slices.Chunk(devices, resourceapi.ResourceSliceMaxDevices) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk})
	}
	return pool
}

// chipPool is a TPU host's chips chip-0 … chip-(n-1) with their torus
// coordinates: the slice's when the host belongs to one, else the host's
// own box.
func chipPool(n *clusterprofile.Node) (resourceslice.Pool, error) {
	t := n.Profile.Spec.TPU
	bounds, err := clusterprofile.ParseBox(t.ChipBounds)
	if err != nil {
		return resourceslice.Pool{}, fmt.Errorf("node %s: spec.tpu.chipBounds: %w", n.Name, err)
	}
	topo, worker, sliceName := bounds, 0, ""
	if t.Slice != nil {
		if topo, err = clusterprofile.ParseBox(t.Slice.Topology); err != nil {
			return resourceslice.Pool{}, fmt.Errorf("node %s: spec.tpu.slice.topology: %w", n.Name, err)
		}
		worker, sliceName = t.Slice.WorkerID, t.Slice.Name
	}
	var devices []resourceapi.Device
	for i := range bounds.Volume() {
		c := clusterprofile.ChipCoord(topo, bounds, worker, i)
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"generation": {StringValue: ptr.To(t.Generation)},
			"topology":   {StringValue: ptr.To(topo.String())},
			"x":          {IntValue: ptr.To(int64(c.X))},
			"y":          {IntValue: ptr.To(int64(c.Y))},
			"z":          {IntValue: ptr.To(int64(c.Z))},
			"workerID":   {IntValue: ptr.To(int64(worker))},
		}
		if sliceName != "" {
			attrs["slice"] = resourceapi.DeviceAttribute{StringValue: ptr.To(sliceName)}
		}
		devices = append(devices, resourceapi.Device{Name: fmt.Sprintf("chip-%d", i), Attributes: attrs})
	}
	return resourceslice.Pool{NodeSelector: nodeNameSelector(n.Name), Slices: []resourceslice.Slice{{Devices: devices}}}, nil
}

// maxSubsliceHosts is the most hosts a sub-slice pool can count: a device
// consumes from at most ResourceSliceMaxDeviceCounterConsumptionsPerDevice
// counter sets of ResourceSliceMaxCountersPerCounterSet counters.
const maxSubsliceHosts = resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice * resourceapi.ResourceSliceMaxCountersPerCounterSet

// subslicePool is a TPU slice's multi-host sub-slices. Shapes: every box
// whose sides are multiples of the host's chipBounds and divide the
// topology's; origins: every host-aligned place where the box fits without
// wrapping around. Each sub-slice consumes one counter per host it covers
// (counter sets hosts-<k> of up to 32 hosts, each counter 1), so
// overlapping sub-slices are never allocated together; slices of at most
// 64 hosts. Each device selects the hosts holding its chips
// (perDeviceNodeSelection). Devices are listed from the largest shape to
// the smallest, origins in x, y, z order.
func subslicePool(s clusterprofile.ResolvedSlice) (resourceslice.Pool, error) {
	if len(s.Hosts) > maxSubsliceHosts {
		return resourceslice.Pool{}, fmt.Errorf("TPU slice %s: %d hosts, a sub-slice pool counts at most %d", s.Name, len(s.Hosts), maxSubsliceHosts)
	}
	grid := clusterprofile.Box{X: s.Topology.X / s.ChipBounds.X, Y: s.Topology.Y / s.ChipBounds.Y, Z: s.Topology.Z / s.ChipBounds.Z}
	var sets []resourceapi.CounterSet
	for k := 0; k*resourceapi.ResourceSliceMaxCountersPerCounterSet < len(s.Hosts); k++ {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("%s-%d", hostCounterSet, k), Counters: map[string]resourceapi.Counter{}}
		for w := k * resourceapi.ResourceSliceMaxCountersPerCounterSet; w < min(len(s.Hosts), (k+1)*resourceapi.ResourceSliceMaxCountersPerCounterSet); w++ {
			set.Counters[hostCounter(w)] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		sets = append(sets, set)
	}
	var shapes []clusterprofile.Box // in host units
	for _, z := range divisors(grid.Z) {
		for _, y := range divisors(grid.Y) {
			for _, x := range divisors(grid.X) {
				shapes = append(shapes, clusterprofile.Box{X: x, Y: y, Z: z})
			}
		}
	}
	slices.SortStableFunc(shapes, func(a, b clusterprofile.Box) int { return b.Volume() - a.Volume() })
	var devices []resourceapi.Device
	for _, shape := range shapes {
		chipShape := clusterprofile.Box{X: shape.X * s.ChipBounds.X, Y: shape.Y * s.ChipBounds.Y, Z: shape.Z * s.ChipBounds.Z}
		for oz := 0; oz+shape.Z <= grid.Z; oz++ {
			for oy := 0; oy+shape.Y <= grid.Y; oy++ {
				for ox := 0; ox+shape.X <= grid.X; ox++ {
					devices = append(devices, subsliceDevice(s, grid, chipShape, shape, ox, oy, oz))
				}
			}
		}
	}
	pool := resourceslice.Pool{}
	for chunk := range slices.Chunk(sets, resourceapi.ResourceSliceMaxCounterSets) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{SharedCounters: chunk, PerDeviceNodeSelection: ptr.To(true)})
	}
	for chunk := range slices.Chunk(devices, resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk, PerDeviceNodeSelection: ptr.To(true)})
	}
	return pool, nil
}

// subsliceDevice is the sub-slice of shape (host units; chipShape in
// chips) at host-grid origin (ox, oy, oz).
func subsliceDevice(s clusterprofile.ResolvedSlice, grid, chipShape, shape clusterprofile.Box, ox, oy, oz int) resourceapi.Device {
	x, y, z := ox*s.ChipBounds.X, oy*s.ChipBounds.Y, oz*s.ChipBounds.Z
	consumes := map[string]map[string]resourceapi.Counter{}
	var hosts []string
	for dz := range shape.Z {
		for dy := range shape.Y {
			for dx := range shape.X {
				w := (ox + dx) + (oy+dy)*grid.X + (oz+dz)*grid.X*grid.Y
				hosts = append(hosts, s.Hosts[w])
				set := fmt.Sprintf("%s-%d", hostCounterSet, w/resourceapi.ResourceSliceMaxCountersPerCounterSet)
				if consumes[set] == nil {
					consumes[set] = map[string]resourceapi.Counter{}
				}
				consumes[set][hostCounter(w)] = resourceapi.Counter{Value: resource.MustParse("1")}
			}
		}
	}
	dev := resourceapi.Device{
		Name: fmt.Sprintf("sub-%s-%d-%d-%d", chipShape, x, y, z),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":  {StringValue: ptr.To(DeviceTypeSubslice)},
			"shape": {StringValue: ptr.To(chipShape.String())},
			"slice": {StringValue: ptr.To(s.Name)},
			"x":     {IntValue: ptr.To(int64(x))},
			"y":     {IntValue: ptr.To(int64(y))},
			"z":     {IntValue: ptr.To(int64(z))},
			"chips": {IntValue: ptr.To(int64(chipShape.Volume()))},
		},
		NodeSelector: nodeNameSelector(hosts...),
	}
	for _, set := range slices.Sorted(maps.Keys(consumes)) {
		dev.ConsumesCounters = append(dev.ConsumesCounters, resourceapi.DeviceCounterConsumption{CounterSet: set, Counters: consumes[set]})
	}
	return dev
}

func hostCounter(worker int) string { return fmt.Sprintf("host-%d", worker) }

func divisors(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// LoadCluster loads and resolves a cluster profile (a built-in name or a
// file).
func LoadCluster(nameOrPath string) (*clusterprofile.Cluster, error) {
	src, err := clusterprofile.Load(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("load cluster profile: %w", err)
	}
	c, err := clusterprofile.Resolve(src)
	if err != nil {
		return nil, fmt.Errorf("resolve cluster profile: %w", err)
	}
	return c, nil
}

// ClusterSlices returns the ResourceSlices the reference drivers' pools for
// the nodes of c become in the API server, as a scheduler sees them: a
// node's own pools name the node in spec.nodeName, as the kubelet plugins
// publish them on real nodes (Run selects simulated nodes by name instead,
// since they have no Node objects), cluster-level pools keep their node
// selection. Slices are named <driver>-<pool>-<index>, so they sort in
// publishing order within a pool; every pool has generation 1.
func ClusterSlices(ctx context.Context, c *clusterprofile.Cluster, gpuDriver string) ([]*resourceapi.ResourceSlice, error) {
	pools, err := clusterPools(ctx, c, gpuDriver, false)
	if err != nil {
		return nil, err
	}
	var out []*resourceapi.ResourceSlice
	for _, p := range pools {
		for i, s := range p.pool.Slices {
			spec := resourceapi.ResourceSliceSpec{
				Driver:                 p.driver,
				Pool:                   resourceapi.ResourcePool{Name: p.name, Generation: 1, ResourceSliceCount: int64(len(p.pool.Slices))},
				PerDeviceNodeSelection: s.PerDeviceNodeSelection,
				Devices:                s.Devices,
				SharedCounters:         s.SharedCounters,
			}
			switch {
			case s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection:
			case !p.clusterLevel:
				spec.NodeName = ptr.To(p.name)
			default:
				spec.NodeSelector = p.pool.NodeSelector
			}
			out = append(out, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", p.driver, p.name, i)},
				Spec:       spec,
			})
		}
	}
	return out, nil
}
