package kit

import (
	"path/filepath"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// hostPath returns where the kit sees the node's path p: below the
// longest directory of Config.NodeHostPaths that holds p, or p itself.
func (c Config) HostPath(p string) string {
	p = filepath.Clean(p)
	best, bestHost := "", ""
	for node, host := range c.NodeHostPaths {
		node = filepath.Clean(node)
		if p != node && !strings.HasPrefix(p, strings.TrimSuffix(node, "/")+"/") {
			continue
		}
		if len(node) > len(best) {
			best, bestHost = node, host
		}
	}
	if best == "" {
		return p
	}
	return filepath.Join(bestHost, strings.TrimPrefix(p, best))
}

// hostDeviceNodes rewrites the host path of every device node in cache's
// specs to where the kit sees it (Config.hostPath), so that applying a
// device's edits here stats the node's device files, as the node's runtime
// does there. A device node without a host path has its path there.
func (c Config) hostDeviceNodes(cache *cdi.Cache) {
	if len(c.NodeHostPaths) == 0 {
		return
	}
	for _, id := range cache.ListDevices() {
		d := cache.GetDevice(id)
		if d == nil {
			continue
		}
		nodes := d.ContainerEdits.DeviceNodes
		if spec := d.GetSpec(); spec != nil {
			nodes = append(nodes[:len(nodes):len(nodes)], spec.ContainerEdits.DeviceNodes...)
		}
		for _, n := range nodes {
			if n == nil {
				continue
			}
			src := n.HostPath
			if src == "" {
				src = n.Path
			}
			if h := c.HostPath(src); h != src {
				n.HostPath = h
			}
		}
	}
}

// sysfsSkipReason is why a step that reads the node's sysfs cannot run.
const SysfsSkipReason = "the kit cannot read the node's sysfs: no --node-sysfs (drakit's emulated node: $DRAKIT_EMULATOR_ROOT/sys, a real node: /sys)"

// EmulatorRootOf is the emulator root of node as the kit reaches it:
// NodeEmulatorRoots' entry, else NodeEmulatorRoot when node is NodeName
// or NodeName is unset (the cluster's only node); "" when the kit knows
// none.
func (c Config) EmulatorRootOf(node string) string {
	if root := c.NodeEmulatorRoots[node]; root != "" {
		return root
	}
	if c.NodeName == "" || c.NodeName == node {
		return c.NodeEmulatorRoot
	}
	return ""
}
