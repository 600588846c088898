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
	"k8s.io/klog/v2"
)

// plugin implements kubeletplugin.DRAPlugin.
type plugin struct {
	driverName string
	poolName   string
	devices    map[string]GPU // by device name
	cdi        *cdiSpecs
	checkpoint *checkpoint
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
	fatal      context.CancelCauseFunc
}

// newPlugin loads the checkpoint from o.pluginDir.
func newPlugin(o pluginOptions) (*plugin, error) {
	devices, err := o.inventory.byDeviceName()
	if err != nil {
		return nil, err
	}
	cp := &checkpoint{path: filepath.Join(o.pluginDir, checkpointFile)}
	prepared, err := cp.load()
	if err != nil {
		return nil, err
	}
	return &plugin{
		driverName: o.driverName,
		poolName:   o.poolName,
		devices:    devices,
		cdi:        o.cdi,
		checkpoint: cp,
		fatal:      o.fatal,
		prepared:   prepared,
	}, nil
}

// PrepareResourceClaims writes a CDI spec per claim and checkpoints it; see
// the package documentation for the contract.
func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := p.prepare(claim)
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

func (p *plugin) prepare(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	id := fmt.Sprintf("claim %s/%s (%s)", claim.Namespace, claim.Name, claim.UID)
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("prepare %s: not allocated", id)
	}
	uid := string(claim.UID)
	entry := preparedClaim{Namespace: claim.Namespace, Name: claim.Name, Devices: []preparedDevice{}}
	var gpus []GPU
	seen := map[string]bool{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != p.driverName {
			continue
		}
		if r.Pool != p.poolName {
			return nil, fmt.Errorf("prepare %s: device %s is in pool %s, this node's pool is %s", id, r.Device, r.Pool, p.poolName)
		}
		g, ok := p.devices[r.Device]
		if !ok {
			return nil, fmt.Errorf("prepare %s: device %s is not on this node", id, r.Device)
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
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
		if !seen[r.Device] {
			seen[r.Device] = true
			gpus = append(gpus, g)
		}
	}
	// Writing the spec first is safe: unprepare removes it by name even
	// when the checkpoint never learned about it.
	if len(gpus) > 0 {
		if err := p.cdi.write(uid, gpus); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
	}
	if old, ok := p.prepared[uid]; !ok || !reflect.DeepEqual(old, entry) {
		next := maps.Clone(p.prepared)
		next[uid] = entry
		if err := p.checkpoint.save(next); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
		p.prepared = next
	}
	return kubeletDevices(entry), nil
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

// UnprepareResourceClaims removes each claim's CDI spec and checkpoint entry;
// claims that are not prepared succeed.
func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		err := p.unprepare(claim)
		if err == nil {
			logger.V(2).Info("Unprepared claim", "claim", claim.NamespacedName, "uid", claim.UID)
		}
		result[claim.UID] = err // the kubelet reports and retries failures
	}
	return result, nil
}

func (p *plugin) unprepare(claim kubeletplugin.NamespacedObject) error {
	uid := string(claim.UID)
	if err := p.cdi.remove(uid); err != nil {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	if _, ok := p.prepared[uid]; !ok {
		return nil
	}
	next := maps.Clone(p.prepared)
	delete(next, uid)
	if err := p.checkpoint.save(next); err != nil {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	p.prepared = next
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
