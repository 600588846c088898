package cpudriver

import (
	"context"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
)

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "cpu.drakit.dev/checkpoint/v1"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be read as
// this driver wrote it.
var ErrCorruptCheckpoint = pluginharness.ErrCorruptCheckpoint

// preparedClaim is what the checkpoint holds about a prepared claim: its
// shares with the capacity each consumes (pluginharness.PreparedDevice).
type preparedClaim = pluginharness.Claim[pluginharness.PreparedDevice]

// node is the driver's side of the kubelet plugin (pluginharness.Driver):
// the NUMA nodes it publishes and the CDI edits of a prepared claim.
// Nothing is done on the node at prepare or unprepare: the kubelet sizes
// the pod's cgroups from the pod status the scheduler wrote.
type node struct {
	name   string
	numa   []numaNode
	byName map[string]numaNode
}

var _ pluginharness.Driver[pluginharness.PreparedDevice] = (*node)(nil)

func newNode(name string, numa []numaNode) *node {
	n := &node{name: name, numa: numa, byName: make(map[string]numaNode, len(numa))}
	for _, nn := range numa {
		n.byName[deviceName(nn.ID)] = nn
	}
	return n
}

// Discover returns the node's pool (buildResources).
func (n *node) Discover(context.Context, map[string]preparedClaim) (resourceslice.DriverResources, error) {
	return buildResources(n.name, n.numa), nil
}

// Admit refuses admin access: a share of a NUMA node's CPUs has nothing to
// administer.
func (n *node) Admit(device string, adminAccess bool) error {
	if adminAccess {
		return fmt.Errorf("device %s: admin access is not supported by this driver", device)
	}
	return nil
}

// Prepare has nothing to do on the node.
func (n *node) Prepare(context.Context, string, *preparedClaim, func() error) error { return nil }

// Unprepare has nothing to undo on the node.
func (n *node) Unprepare(context.Context, string, preparedClaim) error { return nil }

// Edits are the claim's CDI edits: one CDI device per NUMA node the claim
// has shares of, in the order of the allocation results, with
//
//	DRAKIT_CPU_NUMA_<id>_CPUSET=<the node's cpulist>
//	DRAKIT_CPU_NUMA_<id>_CPUS=<cpus the claim's shares of it consume>
//	DRAKIT_CPU_NUMA_<id>_MEMORY=<bytes they consume>
//
// (several shares of one node, from several requests, add up).
func (n *node) Edits(_ context.Context, _ string, claim preparedClaim) (pluginharness.Edits, error) {
	var order []string
	sums := map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, pd := range claim.Devices {
		if _, ok := n.byName[pd.Device]; !ok {
			return pluginharness.Edits{}, fmt.Errorf("device %s is not a NUMA node of this node", pd.Device)
		}
		if !slices.Contains(order, pd.Device) {
			order = append(order, pd.Device)
			sums[pd.Device] = map[resourceapi.QualifiedName]resource.Quantity{}
		}
		for _, key := range []resourceapi.QualifiedName{capacityCPU, capacityMemory} {
			q := sums[pd.Device][key]
			if c, ok := pd.ConsumedCapacity[key]; ok {
				q.Add(c)
			}
			sums[pd.Device][key] = q
		}
	}
	var e pluginharness.Edits
	for _, name := range order {
		nn := n.byName[name]
		p := envPrefix(nn.ID)
		cpus, mem := sums[name][capacityCPU], sums[name][capacityMemory]
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: name, Edits: cdispec.ContainerEdits{Env: []string{
			p + "_CPUSET=" + nn.CPUList,
			p + "_CPUS=" + cpus.String(),
			fmt.Sprintf("%s_MEMORY=%d", p, mem.Value()),
		}}})
	}
	return e, nil
}
