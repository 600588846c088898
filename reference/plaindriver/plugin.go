package plaindriver

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
	devices    []device          // by index
	byName     map[string]device // the same devices by name
	cdi        *cdiSpecs
	checkpoint *checkpoint
	defect     Defect
	// fatal stops Run; HandleError calls it for unrecoverable errors.
	fatal context.CancelCauseFunc

	mu       sync.Mutex
	prepared map[string]preparedClaim // by claim UID; mirrors the checkpoint
}

var _ kubeletplugin.DRAPlugin = (*plugin)(nil)

type pluginOptions struct {
	driverName string
	poolName   string
	devices    []device
	stateDir   string // checkpoint directory
	cdi        *cdiSpecs
	defect     Defect
	fatal      context.CancelCauseFunc
}

// newPlugin loads the checkpoint from o.stateDir.
func newPlugin(o pluginOptions) (*plugin, error) {
	cp := &checkpoint{path: filepath.Join(o.stateDir, checkpointFile)}
	prepared, err := cp.load()
	if err != nil {
		return nil, err
	}
	p := &plugin{
		driverName: o.driverName,
		poolName:   o.poolName,
		devices:    o.devices,
		byName:     make(map[string]device, len(o.devices)),
		cdi:        o.cdi,
		checkpoint: cp,
		defect:     o.defect,
		fatal:      o.fatal,
		prepared:   prepared,
	}
	for _, d := range o.devices {
		p.byName[d.Name] = d
	}
	return p, nil
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
	if err := checkClaimUID(string(claim.UID)); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", id, err)
	}
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
		if _, ok := p.byName[r.Device]; !ok {
			return nil, fmt.Errorf("prepare %s: device %s is not on this node", id, r.Device)
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		if other, ok := p.conflict(uid, r.Device, admin); ok {
			return nil, fmt.Errorf("prepare %s: device %s is already prepared for claim %s/%s (%s)",
				id, r.Device, p.prepared[other].Namespace, p.prepared[other].Name, other)
		}
		entry.Devices = append(entry.Devices, preparedDevice{
			Request:      r.Request,
			Pool:         r.Pool,
			Device:       r.Device,
			AdminAccess:  admin,
			CDIDeviceIDs: []string{p.cdi.deviceID(uid, r.Device)},
		})
	}
	if len(entry.Devices) > 0 {
		// Before the checkpoint: unprepare removes the spec by its name
		// even when the checkpoint never learned about the claim.
		if err := p.writeSpec(ctx, uid, entry); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
	}
	if old, had := p.prepared[uid]; !had || !reflect.DeepEqual(old, entry) {
		if err := p.save(uid, entry); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
	}
	return kubeletDevices(entry), nil
}

// checkClaimUID refuses a claim UID that is not made of letters, digits
// and '-' (an apiserver UID is a UUID): the UID names the claim's spec file
// and CDI devices, and must not lead out of the CDI directory.
func checkClaimUID(uid string) error {
	if uid == "" {
		return errors.New("the claim has no UID")
	}
	for _, r := range uid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("claim UID %q has characters other than letters, digits and '-'", uid)
		}
	}
	return nil
}

// writeSpec writes the claim's spec for its devices in the order of the
// allocation results, each device once. With DefectExtraDevice the first
// device also injects the node's device with the lowest index that the
// claim was not allocated.
func (p *plugin) writeSpec(ctx context.Context, uid string, entry preparedClaim) error {
	var devs []device
	allocated := map[string]bool{}
	for _, pd := range entry.Devices {
		if allocated[pd.Device] {
			continue
		}
		allocated[pd.Device] = true
		devs = append(devs, p.byName[pd.Device])
	}
	var extra *device
	if p.defect == DefectExtraDevice {
		for i := range p.devices {
			if !allocated[p.devices[i].Name] {
				extra = &p.devices[i]
				break
			}
		}
		if extra == nil {
			klog.FromContext(ctx).Info("Defect extra-device: the claim has every device of the node, no other one to inject",
				"claim", klog.KRef(entry.Namespace, entry.Name), "uid", uid)
		} else {
			klog.FromContext(ctx).V(2).Info("Defect extra-device: injecting a device the claim was not allocated",
				"claim", klog.KRef(entry.Namespace, entry.Name), "uid", uid, "device", extra.Name)
		}
	}
	return p.cdi.write(uid, devs, extra)
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

// UnprepareResourceClaims removes each claim's CDI spec (unless
// DefectLeaveCDISpec) and checkpoint entry; claims that are not prepared
// succeed.
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
	if err := checkClaimUID(uid); err != nil {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	if p.defect == DefectLeaveCDISpec {
		klog.FromContext(ctx).V(2).Info("Defect leave-cdi-spec: leaving the claim's CDI spec behind",
			"claim", claim.NamespacedName, "uid", uid, "spec", p.cdi.specPath(uid))
	} else {
		// By its deterministic name, also when the checkpoint does not
		// know the claim: a spec written before a crash goes too.
		if err := p.cdi.remove(uid); err != nil {
			return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
		}
	}
	if err := p.forget(uid); err != nil {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	return nil
}

// HandleError logs recoverable errors (among them a pool the ResourceSlice
// controller refuses and slices the apiserver rejects) and stops the driver
// on all others.
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
