package nicdriver

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// plugin is the NIC driver's kubelet plugin: the harness prepares the
// claims' VFs (hardware.go), shares the PFs' bandwidth shares (the harness
// records one claim per device name and refuses a device prepared for
// another claim, which a device with allowMultipleAllocations must allow),
// and after a claim's devices are prepared the plugin writes their status.
type plugin struct {
	inner  *pluginharness.Plugin[vfDevice, *vfDevice]
	hw     *hardware
	shares *shares
	// status writes status.devices; nil when Config.DeviceStatus is off.
	status *statusWriter
	driver string
	pool   string
	ips    map[string]string
	now    func() time.Time

	mu sync.Mutex
}

var _ kubeletplugin.DRAPlugin = (*plugin)(nil)

// newPlugin loads both checkpoints, undoes the unfinished prepares the
// harness checkpoint records (removing VFs they created) and discovers the
// NICs. fatal stops the driver (HandleError).
func newPlugin(ctx context.Context, cfg Config, client kubernetes.Interface, fatal context.CancelCauseFunc) (*plugin, error) {
	pluginDir := cfg.EffectiveKubeletPluginDir()
	hcfg := harnessConfig(cfg)
	hcfg.Fatal = fatal
	// Which claims use a PF's VFs decides whether unprepare removes them,
	// also for the unfinished prepares New undoes before Discover: the
	// driver reads the harness's checkpoint first (it never writes it).
	cp := &pluginharness.Checkpoint[vfDevice]{Path: filepath.Join(pluginDir, pluginharness.CheckpointFile), Version: checkpointVersion, Checksum: true}
	claims, err := cp.Load()
	if err != nil {
		return nil, err
	}
	hw := &hardware{
		poolName:  cfg.NodeName,
		sysfs:     sysfs{root: cfg.EffectiveSysfsRoot()},
		hostRoot:  cfg.HostRoot,
		vfsPerPF:  cfg.VFsPerPF,
		vfTimeout: cfg.VFTimeout,
		claims:    claims,
	}
	inner, err := pluginharness.New[vfDevice](ctx, hw, hcfg)
	if err != nil {
		return nil, err
	}
	sh, err := newShares(cfg.DriverName, cfg.CDIDir, pluginDir)
	if err != nil {
		return nil, err
	}
	p := &plugin{inner: inner, hw: hw, shares: sh, driver: cfg.DriverName, pool: cfg.NodeName, ips: cfg.DeviceIPs, now: time.Now}
	if cfg.DeviceStatus {
		p.status = &statusWriter{client: client, driver: cfg.DriverName}
	}
	return p, nil
}

// harnessConfig is the harness's configuration of the plugin: the
// checkpoint in the plugin directory, with a checksum, and the VF wording
// of the start-up cleanup.
func harnessConfig(cfg Config) pluginharness.Config {
	return pluginharness.Config{
		DriverName:        cfg.DriverName,
		NodeName:          cfg.NodeName,
		CDIDir:            cfg.CDIDir,
		CheckpointDir:     cfg.EffectiveKubeletPluginDir(),
		CheckpointVersion: checkpointVersion,
		Checksum:          true,
		UndoneLog:         "Undid an unfinished prepare (VFs it created removed)",
	}
}

// Resources is what the plugin publishes.
func (p *plugin) Resources() resourceslice.DriverResources { return p.inner.Resources() }

// isShare reports whether r is a bandwidth share of one of this node's PFs.
func (p *plugin) isShare(r resourceapi.DeviceRequestAllocationResult) bool {
	if r.Driver != p.driver || r.Pool != p.pool {
		return false
	}
	d, ok := p.hw.devices[r.Device]
	return ok && d.Kind == kindPF
}

// split separates a claim's PF shares from the rest, which goes to the
// harness (VFs, other drivers' results and results it refuses).
func (p *plugin) split(claim *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, []resourceapi.DeviceRequestAllocationResult) {
	if claim.Status.Allocation == nil {
		return claim, nil
	}
	rest := claim.DeepCopy()
	rest.Status.Allocation.Devices.Results = nil
	var shared []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if p.isShare(r) {
			shared = append(shared, r)
		} else {
			rest.Status.Allocation.Devices.Results = append(rest.Status.Allocation.Devices.Results, r)
		}
	}
	return rest, shared
}

// PrepareResourceClaims prepares each claim on its own: its VFs through
// the harness, then its PF shares, then its status. A claim whose shares
// fail is undone; one whose status cannot be written stays prepared (a
// repeated prepare writes it again) but reports the error.
func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rest := make([]*resourceapi.ResourceClaim, 0, len(claims))
	shared := map[types.UID][]resourceapi.DeviceRequestAllocationResult{}
	for _, c := range claims {
		r, s := p.split(c)
		rest = append(rest, r)
		shared[c.UID] = s
	}
	result, err := p.inner.PrepareResourceClaims(ctx, rest)
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		res := result[c.UID]
		if res.Err != nil {
			continue
		}
		id := fmt.Sprintf("claim %s/%s (%s)", c.Namespace, c.Name, c.UID)
		devs, err := p.shares.prepare(c, shared[c.UID], p.hw.devices)
		if err != nil {
			result[c.UID] = kubeletplugin.PrepareResult{Err: p.rollBack(ctx, id, c, err)}
			continue
		}
		res.Devices = append(res.Devices, devs...)
		if err := p.writeStatus(ctx, c); err != nil {
			result[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare %s: devices prepared, but %w", id, err)}
			continue
		}
		result[c.UID] = res
	}
	return result, nil
}

// rollBack undoes a claim whose shares failed.
func (p *plugin) rollBack(ctx context.Context, id string, c *resourceapi.ResourceClaim, cause error) error {
	obj := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, UID: c.UID}
	var errs []error
	if res, err := p.inner.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{obj}); err != nil {
		errs = append(errs, err)
	} else if res[c.UID] != nil {
		errs = append(errs, res[c.UID])
	}
	if err := p.shares.unprepare(string(c.UID)); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prepare %s: %w (rolling back: %w)", id, cause, err)
	}
	return fmt.Errorf("prepare %s: %w", id, cause)
}

// writeStatus writes the status.devices entries of the claim's devices of
// this driver.
func (p *plugin) writeStatus(ctx context.Context, c *resourceapi.ResourceClaim) error {
	if p.status == nil {
		return nil
	}
	entries, err := statuses(c, p.driver, p.pool, p.deviceStatuses(c), p.ips, p.now())
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	return p.status.apply(ctx, c.Namespace, c.Name, c.UID, entries)
}

// deviceStatuses is what prepare recorded about the claim's devices of
// this driver, by allocation result index.
func (p *plugin) deviceStatuses(c *resourceapi.ResourceClaim) map[int]deviceStatus {
	uid := string(c.UID)
	vfs := p.inner.Prepared()[uid].Devices
	shares := p.shares.claims[uid].Devices
	out := map[int]deviceStatus{}
	for i, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != p.driver || r.Pool != p.pool {
			continue
		}
		if r.ShareID != nil {
			for _, s := range shares {
				if s.ShareID == string(*r.ShareID) && s.Device == r.Device {
					if st, ok := p.shareStatus(s); ok {
						out[i] = st
					}
				}
			}
			continue
		}
		for _, v := range vfs {
			if v.Device == r.Device && v.Request == r.Request && v.VF != nil && v.VF.ready() {
				out[i] = vfStatus(v.VF)
			}
		}
	}
	return out
}

func vfStatus(rec *vfRecord) deviceStatus {
	st := deviceStatus{
		data:  deviceData{Type: deviceTypeVF, PCIAddress: rec.BDF, PFPCIAddress: rec.PF, VFIndex: &rec.Index},
		iface: rec.Interface, mac: rec.MAC,
		message: fmt.Sprintf("VF %d (%s) of PF %s is ready", rec.Index, rec.BDF, rec.PF),
	}
	if rec.Uverbs != "" {
		st.data.RDMADevice = rec.RDMADevice
		st.data.UverbsDevice = path.Join(containerUverbsDir, rec.Uverbs)
	}
	return st
}

func (p *plugin) shareStatus(s shareRecord) (deviceStatus, bool) {
	d, ok := p.hw.devices[s.Device]
	if !ok || d.PF.Netdev == nil {
		return deviceStatus{}, false
	}
	n := d.PF.Netdev
	link := resource.NewQuantity(n.SpeedMbps*1_000_000, resource.DecimalSI).String()
	bandwidth := s.Bandwidth
	if bandwidth == "" {
		bandwidth = "0"
	}
	return deviceStatus{
		data:    deviceData{Type: deviceTypePF, PCIAddress: d.PF.BDF, Bandwidth: s.Bandwidth, LinkSpeed: link},
		iface:   n.Name,
		mac:     n.Address,
		message: fmt.Sprintf("a share of %s of PF %s (%s, link %s) is ready", bandwidth, d.PF.BDF, n.Name, link),
	}, true
}

// UnprepareResourceClaims undoes each claim: its VFs through the harness,
// its shares, and then removes its status entries of this driver (a
// failure to remove them is logged: the API server drops them when the
// claim is deallocated).
func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logger := klog.FromContext(ctx)
	known := map[types.UID]bool{}
	prepared := p.inner.Prepared()
	for _, c := range claims {
		// Only claims with devices of this driver have entries to remove.
		known[c.UID] = len(prepared[string(c.UID)].Devices) > 0 || len(p.shares.claims[string(c.UID)].Devices) > 0
	}
	result, err := p.inner.UnprepareResourceClaims(ctx, claims)
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		var errs []error
		if result[c.UID] != nil {
			errs = append(errs, result[c.UID])
		}
		if err := p.shares.unprepare(string(c.UID)); err != nil {
			errs = append(errs, fmt.Errorf("unprepare claim %s (%s): %w", c.NamespacedName, c.UID, err))
		}
		result[c.UID] = errors.Join(errs...)
		if result[c.UID] != nil || !known[c.UID] || p.status == nil || c.Name == "" {
			continue
		}
		if err := p.status.apply(ctx, c.Namespace, c.Name, c.UID, nil); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Removing the driver's device status failed; the API server drops it when the claim is deallocated",
				"claim", c.NamespacedName, "uid", c.UID)
		}
	}
	return result, nil
}

// HandleError is the harness's: recoverable errors are logged, others stop
// the driver.
func (p *plugin) HandleError(ctx context.Context, err error, msg string) {
	p.inner.HandleError(ctx, err, msg)
}

// WatchHealthStatus is not supported; Run also turns the health service off.
func (p *plugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
