package driver

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// hardware is the driver's side of the kubelet plugin
// (pluginharness.Driver): the GPUs it discovers and publishes, the dynamic
// MIG devices prepare creates and unprepare destroys, and the CDI edits of
// a prepared claim. The harness does the rest.
type hardware struct {
	driverName string
	poolName   string
	disc       Discoverer
	// driverRoot is the host path of the driver root, nvmlLib that of the
	// NVML library file CDI specs mount.
	driverRoot string
	nvmlLib    string
	mig        *migOps // nil when NVML is not available (no MIG devices then)
	// partitionAlpha publishes the alpha partitionable-device fields.
	partitionAlpha bool
	// bindingConditions publishes the devices with binding conditions.
	bindingConditions bool
	// deviceNodesOnly makes the CDI edits device nodes only.
	deviceNodesOnly bool

	// Set by Discover.
	inventory *Inventory
	devices   map[string]*device // by device name
	publish   publishOptions
}

var _ pluginharness.Driver[preparedDevice] = (*hardware)(nil)

// Discover discovers the GPUs and indexes the devices to publish. A GPU
// instance that a checkpointed claim names, prepared or not, belongs to the
// driver: it never makes a GPU static.
func (h *hardware) Discover(ctx context.Context, prepared map[string]preparedClaim) (resourceslice.DriverResources, error) {
	logger := klog.FromContext(ctx)
	inv, err := discover(ctx, h.disc)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	owned := map[ownedPlacement]bool{}
	for _, c := range prepared {
		for _, d := range c.Devices {
			if d.MIG != nil {
				owned[ownedPlacement{d.MIG.ParentMinor, d.MIG.ProfileID, d.MIG.Start}] = true
			}
		}
	}
	for _, g := range inv.GPUs {
		if g.MIG == nil {
			continue
		}
		for _, inst := range g.MIG.Instances {
			if !owned[ownedPlacement{g.Minor, inst.ProfileID, inst.Start}] {
				logger.Info("Found a MIG device this driver did not create; leaving it alone", "gpu", g.UUID, "gi", inst.GI, "ci", inst.CI, "uuid", inst.UUID)
			}
		}
	}
	devs, err := inv.devices(owned)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	h.inventory = inv
	h.devices = make(map[string]*device, len(devs))
	for i := range devs {
		h.devices[devs[i].Name] = &devs[i]
	}
	h.publish = publishOptions{DriverName: h.driverName, PartitionAlpha: h.partitionAlpha, BindingConditions: h.bindingConditions, Owned: owned}
	res, err := buildResources(h.poolName, inv, h.publish)
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("build ResourceSlices: %w", err)
	}
	return res, nil
}

// Admit refuses admin access to a dynamic MIG partition: it exists only
// while a claim uses it.
func (h *hardware) Admit(device string, adminAccess bool) error {
	if d, ok := h.devices[device]; ok && adminAccess && d.Kind == kindMIGPartition {
		return fmt.Errorf("device %s: admin access to a dynamic MIG partition is not supported (it exists only while a claim uses it)", device)
	}
	return nil
}

// Prepare creates the claim's dynamic MIG partitions: each is recorded and
// the claim checkpointed as incomplete before anything is created, then
// created through NVML, checkpointed after each step (migOps.create).
func (h *hardware) Prepare(ctx context.Context, _ string, claim *preparedClaim, save func() error) error {
	var records []*migRecord
	seen := map[string]bool{}
	for i := range claim.Devices {
		if claim.Devices[i].Pool != h.poolName {
			continue // an IMEX channel: nothing to create
		}
		d := h.devices[claim.Devices[i].Device]
		if d.Kind != kindMIGPartition || seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		rec := &migRecord{
			ParentUUID: d.GPU.UUID, ParentMinor: d.GPU.Minor,
			ProfileIndex: d.Profile.Index, ProfileID: int(d.Profile.Info.Id), Slices: int(d.Profile.Info.SliceCount),
			Start: int(d.Placement.Start), Size: int(d.Placement.Size),
		}
		claim.Devices[i].MIG = rec
		records = append(records, rec)
	}
	if len(records) == 0 {
		return nil
	}
	// Checkpointed before anything is created: a restart from here on
	// finds the records and destroys what they name.
	claim.Incomplete = true
	if err := save(); err != nil {
		return err
	}
	for _, rec := range records {
		if err := h.mig.create(ctx, rec, save); err != nil {
			return err
		}
	}
	claim.Incomplete = false
	return nil
}

// Unprepare destroys the MIG devices the claim records, newest first, and
// returns every failure.
func (h *hardware) Unprepare(ctx context.Context, _ string, claim preparedClaim) error {
	var errs []error
	for i := len(claim.Devices) - 1; i >= 0; i-- {
		if rec := claim.Devices[i].MIG; rec != nil {
			if err := h.mig.destroy(ctx, rec); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// newMonitor makes the health watcher of the discovered devices: it
// publishes through p.Update and finds dynamic MIG devices in p's prepared
// claims.
func (h *hardware) newMonitor(src faultSource, p *pluginharness.Plugin[preparedDevice, *preparedDevice]) (*monitor, error) {
	devs, err := h.inventory.devices(h.publish.Owned)
	if err != nil {
		return nil, err
	}
	m := newMonitor(h.driverName, h.poolName, src, h.inventory.GPUs, devs)
	m.build = func(status map[string]deviceStatus) (resourceslice.DriverResources, error) {
		opts := h.publish
		opts.Status = status
		return buildResources(h.poolName, h.inventory, opts)
	}
	m.update = p.Update
	m.migDevice = func(uuid string, gi, ci int) (string, bool) {
		return h.migDevice(p.Prepared(), uuid, gi, ci)
	}
	return m, nil
}

// migDevice names the published device of MIG device gi/ci of the GPU
// uuid: a static MIG device, or a dynamic partition a prepared claim
// created.
func (h *hardware) migDevice(prepared map[string]preparedClaim, uuid string, gi, ci int) (string, bool) {
	for _, d := range h.devices {
		if d.Kind == kindMIGStatic && d.GPU.UUID == uuid && d.Instance.GI == gi && d.Instance.CI == ci {
			return d.Name, true
		}
	}
	for _, c := range prepared {
		for _, d := range c.Devices {
			if r := d.MIG; r != nil && r.ParentUUID == uuid && r.GI != nil && *r.GI == gi && r.CI != nil && *r.CI == ci {
				return d.Device, true
			}
		}
	}
	return "", false
}
