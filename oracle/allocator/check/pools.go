package check

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// deviceKey identifies a device: driver, pool, device name.
type deviceKey struct{ driver, pool, device string }

func (k deviceKey) String() string { return k.driver + "/" + k.pool + "/" + k.device }

type poolKey struct{ driver, pool string }

// pool is the current generation of one resource pool.
type pool struct {
	key poolKey
	// problem says why the pool cannot be allocated from ("" = usable).
	problem string
	devices map[string]*device
	// counters: counter set name -> counter name -> value.
	counters map[string]map[string]resource.Quantity
}

// device is one device of a pool's current generation.
type device struct {
	key   deviceKey
	pool  *pool
	slice *resourceapi.ResourceSlice
	dev   *resourceapi.Device
}

// buildPools builds the pools the node can see. A pool's generation is the
// highest among the slices the node sees (nodeName, nodeSelector, allNodes
// or per-device node selection); the pool is complete when the cluster holds
// all resourceSliceCount slices of that generation, wherever they are. Its
// devices are those of the visible slices of that generation, its counter
// sets those of all slices of that generation.
func buildPools(features featureSet, node *v1.Node, slices []*resourceapi.ResourceSlice) map[poolKey]*pool {
	all := map[poolKey][]*resourceapi.ResourceSlice{}
	gen := map[poolKey]int64{}
	for _, s := range slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		all[k] = append(all[k], s)
		if !sliceVisible(node, s) {
			continue
		}
		if g, seen := gen[k]; !seen || s.Spec.Pool.Generation > g {
			gen[k] = s.Spec.Pool.Generation
		}
	}
	pools := make(map[poolKey]*pool, len(gen))
	for k, g := range gen {
		p := &pool{key: k, devices: map[string]*device{}, counters: map[string]map[string]resource.Quantity{}}
		pools[k] = p
		var current []*resourceapi.ResourceSlice
		for _, s := range all[k] {
			if s.Spec.Pool.Generation == g {
				current = append(current, s)
			}
		}
		count := current[0].Spec.Pool.ResourceSliceCount
		for _, s := range current {
			if s.Spec.Pool.ResourceSliceCount != count {
				p.problem = fmt.Sprintf("slices of generation %d disagree on resourceSliceCount (%d, %d)", g, count, s.Spec.Pool.ResourceSliceCount)
			}
		}
		if p.problem == "" && int64(len(current)) != count {
			p.problem = fmt.Sprintf("incomplete: %d of %d slices of generation %d present", len(current), count, g)
		}
		for _, s := range current {
			for _, cs := range s.Spec.SharedCounters {
				if _, dup := p.counters[cs.Name]; dup {
					p.problem = fmt.Sprintf("duplicate counter set %q", cs.Name)
					continue
				}
				values := make(map[string]resource.Quantity, len(cs.Counters))
				for name, c := range cs.Counters {
					values[name] = c.Value
				}
				p.counters[cs.Name] = values
			}
			if !sliceVisible(node, s) {
				continue
			}
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				if _, dup := p.devices[d.Name]; dup {
					p.problem = fmt.Sprintf("duplicate device name %q", d.Name)
					continue
				}
				p.devices[d.Name] = &device{key: deviceKey{k.driver, k.pool, d.Name}, pool: p, slice: s, dev: d}
			}
		}
		if p.problem == "" && features.PartitionableDevices {
			p.problem = p.counterReferenceProblem()
		}
	}
	return pools
}

// counterReferenceProblem reports the first device that consumes a counter
// set or counter the pool does not declare.
func (p *pool) counterReferenceProblem() string {
	names := make([]string, 0, len(p.devices))
	for name := range p.devices {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, cc := range p.devices[name].dev.ConsumesCounters {
			set, ok := p.counters[cc.CounterSet]
			if !ok {
				return fmt.Sprintf("device %s: counter set %s not found", name, cc.CounterSet)
			}
			for counter := range cc.Counters {
				if _, ok := set[counter]; !ok {
					return fmt.Sprintf("device %s: counter %s not found in counter set %s", name, counter, cc.CounterSet)
				}
			}
		}
	}
	return ""
}

// sliceVisible says whether the node sees the slice at all: per-device node
// selection is decided per device (see reachable).
func sliceVisible(node *v1.Node, s *resourceapi.ResourceSlice) bool {
	spec := &s.Spec
	if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
		return true
	}
	ok, _, err := nodeMatches(node, spec.NodeName, spec.NodeSelector, spec.AllNodes)
	return ok && err == nil
}

// reachable says whether the device can be used on node, and if not, why.
func (d *device) reachable(features featureSet, node *v1.Node) (bool, string, error) {
	spec := &d.slice.Spec
	if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
		if !features.PartitionableDevices {
			return false, "slice uses perDeviceNodeSelection, PartitionableDevices is disabled", nil
		}
		return nodeMatches(node, d.dev.NodeName, d.dev.NodeSelector, d.dev.AllNodes)
	}
	return nodeMatches(node, spec.NodeName, spec.NodeSelector, spec.AllNodes)
}

// allNodes says whether the device is usable on every node.
func (d *device) allNodes() bool {
	spec := &d.slice.Spec
	if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
		return d.dev.AllNodes != nil && *d.dev.AllNodes
	}
	return spec.AllNodes != nil && *spec.AllNodes
}

func nodeMatches(node *v1.Node, nodeName *string, selector *v1.NodeSelector, allNodes *bool) (bool, string, error) {
	switch {
	case nodeName != nil:
		if *nodeName == node.Name {
			return true, "", nil
		}
		return false, fmt.Sprintf("local to node %q", *nodeName), nil
	case allNodes != nil && *allNodes:
		return true, "", nil
	case selector != nil:
		sel, err := nodeaffinity.NewNodeSelector(selector)
		if err != nil {
			return false, "", fmt.Errorf("parse node selector: %w", err)
		}
		if sel.Match(node) {
			return true, "", nil
		}
		return false, "node selector does not select the node", nil
	default:
		return false, "no node selection set", nil
	}
}
