package simulate

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/emulator/clusterprofile"
	"drakit.dev/drakit/internal/tpuhw"
	"drakit.dev/drakit/reference/driver"
	"drakit.dev/drakit/reference/imex"
	"drakit.dev/drakit/reference/tpudriver"
)

// TPUDriverName is the TPU driver simulated cluster profiles publish for.
const TPUDriverName = tpudriver.DefaultDriverName

// clusterPools returns every pool the reference drivers publish for the
// nodes of c, each built by the driver's own code, in this order: per node
// (in c's order) the GPU driver's pool (nodes with GPUs; driver.NodeResources
// adds the fabric attributes of a node of a clique) and the TPU driver's
// node pool (tpudriver.NodeResources); then the IMEX channel pool of each
// clique (imex.Resources, the fewest channels of its nodes), and the
// sub-slice pools the TPU driver's controller plans from the chip pools
// (tpudriver.SubslicePools with its default shapes), by pool name.
// gpuDriver names the GPU driver.
func clusterPools(ctx context.Context, c *clusterprofile.Cluster, gpuDriver string, partitionableAlpha bool) ([]simulatedNode, error) {
	var out []simulatedNode
	var chipSlices []resourceapi.ResourceSlice
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
			pool.NodeSelector = nodeNameSelector(n.Name)
			out = append(out, simulatedNode{name: n.Name, driver: gpuDriver, pool: pool})
		}
		if p.Spec.TPU != nil {
			pool, err := chipPool(n)
			if err != nil {
				return nil, err
			}
			out = append(out, simulatedNode{name: n.Name, driver: TPUDriverName, pool: pool})
			for _, s := range pool.Slices {
				chipSlices = append(chipSlices, resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
					Driver: TPUDriverName, NodeName: ptr.To(n.Name), Devices: s.Devices}})
			}
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
		res := imex.Resources(map[string][]string{cl.Identity(): slices.Clone(cl.Nodes)}, channels)
		for name, pool := range res.Pools {
			out = append(out, simulatedNode{name: name, driver: gpuDriver, clusterLevel: true, pool: pool})
		}
	}
	cfg := tpudriver.DefaultControllerConfig()
	cfg.DriverName = TPUDriverName
	subslices := tpudriver.SubslicePools(ctx, cfg, chipSlices)
	for _, name := range slices.Sorted(maps.Keys(subslices)) {
		out = append(out, simulatedNode{name: name, driver: TPUDriverName, clusterLevel: true, pool: subslices[name]})
	}
	return out, nil
}

// chipPool is the TPU driver's node pool for a TPU host: the tpu-env the
// emulator renders for it (its slice, or its own box for a host in none)
// and its chips' PCIe roots, handed to tpudriver.NodeResources.
func chipPool(n *clusterprofile.Node) (resourceslice.Pool, error) {
	t := n.Profile.Spec.TPU
	chipBounds, err := tpuhw.ParseBounds(t.ChipBounds)
	if err != nil {
		return resourceslice.Pool{}, fmt.Errorf("node %s: spec.tpu.chipBounds: %w", n.Name, err)
	}
	env := tpuhw.TPUEnv{Generation: t.Generation}
	topology := chipBounds
	if t.Slice != nil {
		if topology, err = tpuhw.ParseBounds(t.Slice.Topology); err != nil {
			return resourceslice.Pool{}, fmt.Errorf("node %s: spec.tpu.slice.topology: %w", n.Name, err)
		}
		env.SliceName, env.WorkerID = t.Slice.Name, t.Slice.WorkerID
	}
	if env.Slice, err = tpuhw.NewSlice(topology, chipBounds); err != nil {
		return resourceslice.Pool{}, fmt.Errorf("node %s: spec.tpu: %w", n.Name, err)
	}
	topo, err := n.Profile.Topology()
	if err != nil {
		return resourceslice.Pool{}, fmt.Errorf("resolve profile of node %s: %w", n.Name, err)
	}
	var roots []string
	for _, c := range topo.TPUChips {
		roots = append(roots, c.HostBridge.Name())
	}
	res, err := tpudriver.NodeResources(TPUDriverName, n.Name, env, roots)
	if err != nil {
		return resourceslice.Pool{}, fmt.Errorf("build TPU pool of node %s: %w", n.Name, err)
	}
	pool := res.Pools[n.Name]
	pool.NodeSelector = nodeNameSelector(n.Name)
	return pool, nil
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
