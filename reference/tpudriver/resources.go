package tpudriver

import (
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/internal/tpuhw"
)

// nodeResources is the node's pool: chip-<index> per chip, with the
// fabric contract's attributes (type chip, uuid (ChipUUID), generation, slice, topology,
// chipBounds, x, y, z, workerID, index) and resource.kubernetes.io/pcieRoot.
// A single-host slice has slice "" and the host's bounds as topology.
func nodeResources(driver, node string, h *host) resourceslice.DriverResources {
	q := func(name string) resourceapi.QualifiedName { return resourceapi.QualifiedName(driver + "/" + name) }
	devices := make([]resourceapi.Device, 0, len(h.chips))
	for _, c := range h.chips {
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			q(AttrType):       {StringValue: ptr.To(TypeChip)},
			q(AttrUUID):       {StringValue: ptr.To(ChipUUID(node, c.Index))},
			q(AttrGeneration): {StringValue: ptr.To(c.Generation.Name)},
			q(AttrSlice):      {StringValue: ptr.To(h.env.SliceName)},
			q(AttrTopology):   {StringValue: ptr.To(h.env.Slice.Topology.String())},
			q(AttrChipBounds): {StringValue: ptr.To(h.env.Slice.ChipBounds.String())},
			q(AttrX):          {IntValue: ptr.To(int64(c.Coord.X))},
			q(AttrY):          {IntValue: ptr.To(int64(c.Coord.Y))},
			q(AttrZ):          {IntValue: ptr.To(int64(c.Coord.Z))},
			q(AttrWorkerID):   {IntValue: ptr.To(int64(h.env.WorkerID))},
			q(AttrIndex):      {IntValue: ptr.To(int64(c.Index))},
		}
		if c.PCIeRoot != "" {
			attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.PCIeRoot)}
		}
		devices = append(devices, resourceapi.Device{Name: ChipDevice(c.Index), Attributes: attrs})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}

// ErrUnknownGeneration is wrapped by NodeResources' error for a tpu-env
// generation tpuhw does not know.
var ErrUnknownGeneration = errors.New("unknown TPU generation")

// NodeResources is the pool the node plugin publishes for node, a host
// whose tpu-env is env and whose chips are accel0 … accel<n-1>, n the
// chips of env's chipBounds, where chip i's PCIe root is pcieRoots[i] (""
// or a short list: unknown). It is the seam through which
// reference/simulate publishes exactly the node plugin's pool for a
// simulated host, without sysfs.
func NodeResources(driver, node string, env tpuhw.TPUEnv, pcieRoots []string) (resourceslice.DriverResources, error) {
	gen, ok := tpuhw.LookupGeneration(env.Generation)
	if !ok {
		return resourceslice.DriverResources{}, fmt.Errorf("node %s: %w %q", node, ErrUnknownGeneration, env.Generation)
	}
	h := &host{env: env}
	for i := range env.Slice.ChipBounds.Chips() {
		c := chip{Index: i, Generation: gen, Coord: env.Slice.ChipCoord(env.WorkerID, i)}
		if i < len(pcieRoots) {
			c.PCIeRoot = pcieRoots[i]
		}
		h.chips = append(h.chips, c)
	}
	return nodeResources(driver, node, h), nil
}
