package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// plugin implements kubeletplugin.DRAPlugin.
type plugin struct {
	driverName string
	poolName   string
	inventory  *Inventory
	devices    map[string]*device // by device name
	publish    publishOptions
	cdi        *cdiSpecs
	checkpoint *checkpoint
	mig        *migOps // nil when NVML is not available (no MIG devices then)
	// fatal stops Run; HandleError calls it for unrecoverable errors.
	fatal context.CancelCauseFunc

	mu       sync.Mutex
	prepared map[string]preparedClaim // by claim UID; mirrors the checkpoint
}

var _ kubeletplugin.DRAPlugin = (*plugin)(nil)

type pluginOptions struct {
	driverName string
	poolName   string
	inventory  *Inventory
	pluginDir  string // checkpoint directory
	cdi        *cdiSpecs
	mig        *migOps
	// partitionAlpha publishes the alpha partitionable-device fields.
	partitionAlpha bool
	fatal          context.CancelCauseFunc
}

// newPlugin loads the checkpoint from o.pluginDir, destroys the MIG devices
// of prepares that did not finish and indexes the devices to publish.
func newPlugin(ctx context.Context, o pluginOptions) (*plugin, error) {
	logger := klog.FromContext(ctx)
	if _, err := o.inventory.byDeviceName(); err != nil {
		return nil, err
	}
	cp := &checkpoint{path: filepath.Join(o.pluginDir, checkpointFile)}
	prepared, err := cp.load()
	if err != nil {
		return nil, err
	}
	p := &plugin{
		driverName: o.driverName,
		poolName:   o.poolName,
		inventory:  o.inventory,
		cdi:        o.cdi,
		checkpoint: cp,
		mig:        o.mig,
		fatal:      o.fatal,
		prepared:   prepared,
	}
	// Instances the checkpoint names, including those the reconciliation
	// below destroys, belong to the driver: they never make a GPU static.
	owned := map[ownedPlacement]bool{}
	for _, c := range prepared {
		for _, d := range c.Devices {
			if d.MIG != nil {
				owned[ownedPlacement{d.MIG.ParentMinor, d.MIG.ProfileID, d.MIG.Start}] = true
			}
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(prepared)) {
		c := prepared[uid]
		if !c.Incomplete {
			continue
		}
		if err := p.undo(ctx, uid, c); err != nil {
			logger.Error(err, "Cleaning up an unfinished prepare failed; unprepare or the next start retries", "claim", klog.KRef(c.Namespace, c.Name), "uid", uid)
			continue
		}
		logger.Info("Destroyed the MIG devices of an unfinished prepare", "claim", klog.KRef(c.Namespace, c.Name), "uid", uid)
	}
	for _, g := range o.inventory.GPUs {
		if g.MIG == nil {
			continue
		}
		for _, inst := range g.MIG.Instances {
			if !owned[ownedPlacement{g.Minor, inst.ProfileID, inst.Start}] {
				logger.Info("Found a MIG device this driver did not create; leaving it alone", "gpu", g.UUID, "gi", inst.GI, "ci", inst.CI, "uuid", inst.UUID)
			}
		}
	}
	devs, err := o.inventory.devices(owned)
	if err != nil {
		return nil, err
	}
	p.devices = make(map[string]*device, len(devs))
	for i := range devs {
		p.devices[devs[i].Name] = &devs[i]
	}
	p.publish = publishOptions{DriverName: o.driverName, PartitionAlpha: o.partitionAlpha, Owned: owned}
	return p, nil
}

// resources is what the driver publishes.
func (p *plugin) resources() (resourceslice.DriverResources, error) {
	return buildResources(p.poolName, p.inventory, p.publish)
}

// PrepareResourceClaims writes a CDI spec per claim and checkpoints it; see
// the package documentation for the contract.
func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := p.prepare(ctx, claim)
		if err != nil {
			// The kubelet reports it (pod event, its log); not logged twice.
			result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		logger.V(2).Info("Prepared claim", "claim", klog.KObj(claim), "uid", claim.UID, "devices", len(devices))
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return result, nil
}

func (p *plugin) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	id := fmt.Sprintf("claim %s/%s (%s)", claim.Namespace, claim.Name, claim.UID)
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("prepare %s: not allocated", id)
	}
	uid := string(claim.UID)
	entry := preparedClaim{Namespace: claim.Namespace, Name: claim.Name, Devices: []preparedDevice{}}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != p.driverName {
			continue
		}
		if r.Pool != p.poolName {
			return nil, fmt.Errorf("prepare %s: device %s is in pool %s, this node's pool is %s", id, r.Device, r.Pool, p.poolName)
		}
		d, ok := p.devices[r.Device]
		if !ok {
			return nil, fmt.Errorf("prepare %s: device %s is not on this node", id, r.Device)
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		if admin && d.Kind == kindMIGPartition {
			return nil, fmt.Errorf("prepare %s: device %s: admin access to a dynamic MIG partition is not supported (it exists only while a claim uses it)", id, r.Device)
		}
		if other, ok := p.conflict(uid, r.Device, admin); ok {
			return nil, fmt.Errorf("prepare %s: device %s is already prepared for claim %s/%s (%s)", id, r.Device, p.prepared[other].Namespace, p.prepared[other].Name, other)
		}
		entry.Devices = append(entry.Devices, preparedDevice{
			Request:      r.Request,
			Pool:         r.Pool,
			Device:       r.Device,
			AdminAccess:  admin,
			CDIDeviceIDs: []string{p.cdi.deviceID(uid, r.Device)},
		})
	}

	old, had := p.prepared[uid]
	if had && !old.Incomplete && sameDevices(old, entry) {
		// Prepared before: the same spec again, no new MIG device.
		if err := p.writeSpec(uid, old); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
		return kubeletDevices(old), nil
	}
	if had {
		// An earlier attempt did not finish (or was for another
		// allocation): undo what it created first.
		if err := p.undo(ctx, uid, old); err != nil {
			return nil, fmt.Errorf("prepare %s: clean up an earlier attempt: %w", id, err)
		}
	}

	var records []*migRecord
	seen := map[string]bool{}
	for i := range entry.Devices {
		d := p.devices[entry.Devices[i].Device]
		if d.Kind != kindMIGPartition || seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		rec := &migRecord{
			ParentUUID: d.GPU.UUID, ParentMinor: d.GPU.Minor,
			ProfileIndex: d.Profile.Index, ProfileID: int(d.Profile.Info.Id), Slices: int(d.Profile.Info.SliceCount),
			Start: int(d.Placement.Start), Size: int(d.Placement.Size),
		}
		entry.Devices[i].MIG = rec
		records = append(records, rec)
	}
	if len(records) > 0 {
		// Checkpointed before anything is created: a restart from here
		// on finds the records and destroys what they name.
		entry.Incomplete = true
		if err := p.save(uid, entry); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
		for _, rec := range records {
			if err := p.mig.create(ctx, rec, func() error { return p.save(uid, entry) }); err != nil {
				return nil, p.rollBack(ctx, id, uid, entry, err)
			}
		}
		entry.Incomplete = false
	}
	if len(entry.Devices) > 0 {
		// Writing the spec before the checkpoint is safe: unprepare
		// removes it by name even when the checkpoint never learned
		// about it.
		if err := p.writeSpec(uid, entry); err != nil {
			return nil, p.rollBack(ctx, id, uid, entry, err)
		}
	}
	if !had || !reflect.DeepEqual(old, entry) {
		if err := p.save(uid, entry); err != nil {
			return nil, p.rollBack(ctx, id, uid, entry, err)
		}
	}
	return kubeletDevices(entry), nil
}

// rollBack undoes a failed prepare and returns the error to report.
func (p *plugin) rollBack(ctx context.Context, id, uid string, entry preparedClaim, cause error) error {
	if err := p.undo(ctx, uid, entry); err != nil {
		return fmt.Errorf("prepare %s: %w (rolling back: %w)", id, cause, err)
	}
	return fmt.Errorf("prepare %s: %w", id, cause)
}

// undo destroys the MIG devices entry records (newest first), removes the
// claim's spec and forgets the claim. When a destroy fails the entry stays,
// marked incomplete, so that unprepare or the next start retries.
func (p *plugin) undo(ctx context.Context, uid string, entry preparedClaim) error {
	var errs []error
	for i := len(entry.Devices) - 1; i >= 0; i-- {
		if rec := entry.Devices[i].MIG; rec != nil {
			if err := p.mig.destroy(ctx, rec); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		entry.Incomplete = true
		if err := p.save(uid, entry); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	if err := p.cdi.remove(uid); err != nil {
		return err
	}
	return p.forget(uid)
}

// save checkpoints entry as the claim's state.
func (p *plugin) save(uid string, entry preparedClaim) error {
	next := maps.Clone(p.prepared)
	next[uid] = entry
	if err := p.checkpoint.save(next); err != nil {
		return err
	}
	p.prepared = next
	return nil
}

// forget removes the claim from the checkpoint.
func (p *plugin) forget(uid string) error {
	if _, ok := p.prepared[uid]; !ok {
		return nil
	}
	next := maps.Clone(p.prepared)
	delete(next, uid)
	if err := p.checkpoint.save(next); err != nil {
		return err
	}
	p.prepared = next
	return nil
}

// sameDevices compares two entries' allocations, ignoring MIG records.
func sameDevices(a, b preparedClaim) bool {
	return slices.EqualFunc(a.Devices, b.Devices, func(x, y preparedDevice) bool {
		return x.Request == y.Request && x.Pool == y.Pool && x.Device == y.Device &&
			x.AdminAccess == y.AdminAccess && slices.Equal(x.CDIDeviceIDs, y.CDIDeviceIDs)
	})
}

// writeSpec writes the claim's CDI spec: per device its /dev/nvidia<minor>
// (the parent's for a MIG device), a MIG device's GI and CI capability
// nodes, and DRAKIT_DEVICE_<DEVICE> with its UUID.
func (p *plugin) writeSpec(uid string, entry preparedClaim) error {
	var devs []cdiDevice
	seen := map[string]bool{}
	for _, pd := range entry.Devices {
		if seen[pd.Device] {
			continue
		}
		seen[pd.Device] = true
		if rec := pd.MIG; rec != nil {
			if !rec.ready() {
				return fmt.Errorf("device %s: %s was not created", pd.Device, rec)
			}
			devs = append(devs, cdiDevice{name: pd.Device, uuid: rec.UUID, nodes: migNodes(rec.ParentMinor, rec.GICapMinor, rec.CICapMinor)})
			continue
		}
		d, ok := p.devices[pd.Device]
		if !ok {
			return fmt.Errorf("device %s is not on this node", pd.Device)
		}
		switch d.Kind {
		case kindGPU:
			devs = append(devs, cdiDevice{name: d.Name, uuid: d.GPU.UUID, nodes: []string{fmt.Sprintf("nvidia%d", d.GPU.Minor)}})
		case kindMIGStatic:
			inst := d.Instance
			devs = append(devs, cdiDevice{name: d.Name, uuid: inst.UUID, nodes: migNodes(d.GPU.Minor, inst.GICapMinor, inst.CICapMinor)})
		default:
			return fmt.Errorf("device %s: MIG partition without a MIG device record", pd.Device)
		}
	}
	if len(devs) == 0 {
		return nil
	}
	return p.cdi.write(uid, devs)
}

func migNodes(parentMinor, giCap, ciCap int) []string {
	return []string{
		fmt.Sprintf("nvidia%d", parentMinor),
		fmt.Sprintf("nvidia-caps/nvidia-cap%d", giCap),
		fmt.Sprintf("nvidia-caps/nvidia-cap%d", ciCap),
	}
}

// conflict reports a claim other than uid that holds device exclusively;
// admin access on either side shares the device.
func (p *plugin) conflict(uid, device string, admin bool) (string, bool) {
	if admin {
		return "", false
	}
	for _, other := range slices.Sorted(maps.Keys(p.prepared)) {
		if other == uid {
			continue
		}
		for _, d := range p.prepared[other].Devices {
			if d.Device == device && d.Pool == p.poolName && !d.AdminAccess {
				return other, true
			}
		}
	}
	return "", false
}

func kubeletDevices(c preparedClaim) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(c.Devices))
	for _, d := range c.Devices {
		out = append(out, kubeletplugin.Device{
			Requests:     []string{d.Request},
			PoolName:     d.Pool,
			DeviceName:   d.Device,
			CDIDeviceIDs: slices.Clone(d.CDIDeviceIDs),
		})
	}
	return out
}

// UnprepareResourceClaims destroys each claim's MIG devices and removes its
// CDI spec and checkpoint entry; claims that are not prepared succeed.
func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		err := p.unprepare(ctx, claim)
		if err == nil {
			logger.V(2).Info("Unprepared claim", "claim", claim.NamespacedName, "uid", claim.UID)
		}
		result[claim.UID] = err // the kubelet reports and retries failures
	}
	return result, nil
}

func (p *plugin) unprepare(ctx context.Context, claim kubeletplugin.NamespacedObject) error {
	uid := string(claim.UID)
	entry, ok := p.prepared[uid]
	if !ok {
		// Unknown: only a spec written before a crash may be left.
		if err := p.cdi.remove(uid); err != nil {
			return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
		}
		return nil
	}
	if err := p.undo(ctx, uid, entry); err != nil {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	return nil
}

// HandleError logs recoverable errors and stops the driver on all others.
func (p *plugin) HandleError(ctx context.Context, err error, msg string) {
	if errors.Is(err, kubeletplugin.ErrRecoverable) {
		klog.FromContext(ctx).Error(err, msg)
		return
	}
	p.fatal(fmt.Errorf("%s: %w", msg, err))
}

// WatchHealthStatus is not supported; Run also turns the health service off.
func (p *plugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
