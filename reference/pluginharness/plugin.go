package pluginharness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DefaultUndoneLog is what New logs for each unfinished prepare it undid,
// unless Config.UndoneLog says otherwise.
const DefaultUndoneLog = "Undid an unfinished prepare"

// Config configures New and Run. The driver checks its own configuration
// and creates its directories before; paths are host paths.
type Config struct {
	// DriverName is the DRA driver name; the CDI vendor is k8s.<DriverName>.
	DriverName string
	// NodeName is the node the driver runs on; its pool is named after it.
	NodeName string
	// CDIDir is where the per-claim CDI specs are written. Created when
	// missing.
	CDIDir string
	// CheckpointDir holds CheckpointFile. It must exist.
	CheckpointDir string
	// CheckpointVersion is the checkpoint's version string, the driver's
	// own: a checkpoint with another one is corrupt.
	CheckpointVersion string
	// Checksum adds a SHA-256 checksum to the checkpoint (Checkpoint).
	Checksum bool
	// UndoneLog is the message logged for each unfinished prepare New
	// undid at start. Empty: DefaultUndoneLog.
	UndoneLog string
	// KeepSpecOnUnprepare, when set, is asked by every unprepare whether
	// the claim's spec (at the host path spec) stays where it is: a hook
	// for drivers with deliberate defects, which logs why it says yes.
	KeepSpecOnUnprepare func(ctx context.Context, claim kubeletplugin.NamespacedObject, spec string) bool
	// Fatal stops the driver; HandleError calls it with errors that are
	// not kubeletplugin.ErrRecoverable. Run sets its own.
	Fatal context.CancelCauseFunc

	// The fields below are Run's.

	// Client is the client of the cluster the pool is published to.
	Client kubernetes.Interface
	// RegistrarDir is the kubelet's plugin registration directory; it
	// must exist.
	RegistrarDir string
	// PluginDir is the directory of the DRA gRPC socket. Created when
	// missing.
	PluginDir string
	// Republish, when positive, is how often the pool is handed to the
	// ResourceSlice controller again (it retries what the API server
	// rejects by itself, but not a pool it refuses before sending it).
	Republish time.Duration
	// RunningLog returns the key/value pairs the "Driver running" line
	// carries after the driver and the node; nil for none. It is called
	// once the pool is published.
	RunningLog func() []any
	// Health turns the kubelet plugin's health service (DRAResourceHealth)
	// on; the served plugin's WatchHealthStatus then streams reports.
	// Off, the kubelet never calls it.
	Health bool
	// HTTPEndpoint, when set, is the loopback host:port (CheckHTTPEndpoint)
	// Run serves /metrics and /healthz on: Prometheus metrics of the
	// kubelet's prepare and unprepare calls, the published devices and the
	// Go runtime and process, and "ok" once the kubelet registered the
	// plugin and the DRA socket accepts connections (503 otherwise).
	HTTPEndpoint string
	// DeviceMetadata turns on the kubelet plugin helper's device metadata
	// files (KEP-5304): for each request of a prepared claim it writes a
	// metadata file (metadata.resource.k8s.io v1beta1, then v1alpha1) and
	// a CDI spec in CDIDir that bind-mounts it into the containers using
	// the request. Each device carries the attributes the pool publishes
	// for it.
	DeviceMetadata bool
}

// Plugin implements kubeletplugin.DRAPlugin over a Driver; see the package
// documentation for its contract. D is the driver's device record.
type Plugin[D any, P Record[D]] struct {
	drv        Driver[D]
	cfg        Config
	specs      *specs
	checkpoint *Checkpoint[D]
	updated    chan struct{} // Update signals Serve (capacity 1)

	mu        sync.Mutex
	prepared  map[string]Claim[D] // by claim UID; mirrors the checkpoint
	resources resourceslice.DriverResources
	published map[string]bool // the pool's device names
	withdrawn map[string]bool // devices an Update removed and none put back
	// generation is the pool generation the last Update asked for.
	generation int64
}

var _ kubeletplugin.DRAPlugin = (*Plugin[PreparedDevice, *PreparedDevice])(nil)

// New creates the CDI directory, loads the checkpoint from
// cfg.CheckpointDir, undoes the unfinished prepares it records and asks
// drv what to publish.
func New[D any, P Record[D]](ctx context.Context, drv Driver[D], cfg Config) (*Plugin[D, P], error) {
	logger := klog.FromContext(ctx)
	specs, err := newSpecs(cfg.CDIDir, cfg.DriverName)
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint[D]{Path: filepath.Join(cfg.CheckpointDir, CheckpointFile), Version: cfg.CheckpointVersion, Checksum: cfg.Checksum}
	prepared, err := cp.Load()
	if err != nil {
		return nil, err
	}
	p := &Plugin[D, P]{drv: drv, cfg: cfg, specs: specs, checkpoint: cp, prepared: prepared, updated: make(chan struct{}, 1)}
	undone := cfg.UndoneLog
	if undone == "" {
		undone = DefaultUndoneLog
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
		logger.Info(undone, "claim", klog.KRef(c.Namespace, c.Name), "uid", uid)
	}
	resources, err := drv.Discover(ctx, prepared)
	if err != nil {
		return nil, err
	}
	p.resources, p.published, p.withdrawn = resources, deviceNames(resources, cfg.NodeName), map[string]bool{}
	return p, nil
}

// Prepared returns a copy of the prepared claims, by claim UID: what the
// checkpoint holds.
func (p *Plugin[D, P]) Prepared() map[string]Claim[D] {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.prepared)
}

// PrepareResourceClaims prepares each claim on its own; see the package
// documentation for the contract.
func (p *Plugin[D, P]) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
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

func (p *Plugin[D, P]) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	id := fmt.Sprintf("claim %s/%s (%s)", claim.Namespace, claim.Name, claim.UID)
	uid := string(claim.UID)
	if err := checkClaimUID(uid); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", id, err)
	}
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("prepare %s: not allocated", id)
	}
	pool := p.cfg.NodeName
	entry := Claim[D]{Namespace: claim.Namespace, Name: claim.Name, Devices: []D{}}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != p.cfg.DriverName {
			continue
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		if r.Pool != pool {
			pa, ok := any(p.drv).(PoolAdmitter)
			if !ok {
				return nil, fmt.Errorf("prepare %s: device %s is in pool %s, this node's pool is %s", id, r.Device, r.Pool, pool)
			}
			if err := pa.AdmitPool(r.Pool, r.Device); err != nil {
				return nil, fmt.Errorf("prepare %s: %w", id, err)
			}
			entry.Devices = append(entry.Devices, p.preparedDevice(uid, r.Request, r.Pool, r.Device, admin))
			continue
		}
		if p.withdrawn[r.Device] {
			return nil, fmt.Errorf("prepare %s: device %s: %w", id, r.Device, ErrDeviceWithdrawn)
		}
		if !p.published[r.Device] {
			return nil, fmt.Errorf("prepare %s: device %s is not on this node", id, r.Device)
		}
		if err := p.drv.Admit(r.Device, admin); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
		if r.ShareID == nil {
			if other, ok := p.conflict(uid, r.Device, admin); ok {
				return nil, fmt.Errorf("prepare %s: device %s is already prepared for claim %s/%s (%s)",
					id, r.Device, p.prepared[other].Namespace, p.prepared[other].Name, other)
			}
		}
		d := p.preparedDevice(uid, r.Request, r.Pool, r.Device, admin)
		if r.ShareID != nil {
			pd := P(&d).prepared()
			pd.ShareID = string(*r.ShareID)
			pd.ConsumedCapacity = maps.Clone(r.ConsumedCapacity)
		}
		entry.Devices = append(entry.Devices, d)
	}

	old, had := p.prepared[uid]
	if had && !old.Incomplete && sameAllocation[D, P](old, entry) {
		// Prepared before: the same spec again, nothing new on the
		// hardware.
		if err := p.writeSpec(ctx, uid, old); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", id, err)
		}
		return p.kubeletDevices(old), nil
	}
	if had {
		// An earlier attempt did not finish (or was for another
		// allocation): undo it first.
		if err := p.undo(ctx, uid, old); err != nil {
			return nil, fmt.Errorf("prepare %s: clean up an earlier attempt: %w", id, err)
		}
	}
	if err := p.drv.Prepare(ctx, uid, &entry, func() error { return p.save(uid, entry) }); err != nil {
		return nil, p.rollBack(ctx, id, uid, entry, err)
	}
	if len(entry.Devices) > 0 {
		// Writing the spec before the checkpoint is safe: unprepare
		// removes it by name even when the checkpoint never learned
		// about it.
		if err := p.writeSpec(ctx, uid, entry); err != nil {
			return nil, p.rollBack(ctx, id, uid, entry, err)
		}
	}
	if !had || !reflect.DeepEqual(old, entry) {
		if err := p.save(uid, entry); err != nil {
			return nil, p.rollBack(ctx, id, uid, entry, err)
		}
	}
	return p.kubeletDevices(entry), nil
}

// preparedDevice is the record of one allocation result of claim uid.
func (p *Plugin[D, P]) preparedDevice(uid, request, pool, device string, admin bool) D {
	var d D
	*P(&d).prepared() = PreparedDevice{
		Request:      request,
		Pool:         pool,
		Device:       device,
		AdminAccess:  admin,
		CDIDeviceIDs: []string{p.specs.deviceID(uid, device)},
	}
	return d
}

// maxClaimUIDLen bounds a claim UID: with the spec file's prefix
// (k8s.<driver of up to 63 characters>-claim_) and suffix the name stays
// under the 255 bytes a file name may have. An apiserver UID has 36.
const maxClaimUIDLen = 128

// checkClaimUID refuses a claim UID that is not made of letters, digits
// and '-' (an apiserver UID is a UUID) or is longer than maxClaimUIDLen:
// the UID names the claim's spec file and CDI devices, and must not lead
// out of the CDI directory.
func checkClaimUID(uid string) error {
	if uid == "" {
		return errors.New("the claim has no UID")
	}
	if len(uid) > maxClaimUIDLen {
		return fmt.Errorf("claim UID %.16q... has %d characters, more than %d", uid, len(uid), maxClaimUIDLen)
	}
	for _, r := range uid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("claim UID %q has characters other than letters, digits and '-'", uid)
		}
	}
	return nil
}

// rollBack undoes a failed prepare and returns the error to report.
func (p *Plugin[D, P]) rollBack(ctx context.Context, id, uid string, entry Claim[D], cause error) error {
	if err := p.undo(ctx, uid, entry); err != nil {
		return fmt.Errorf("prepare %s: %w (rolling back: %w)", id, cause, err)
	}
	return fmt.Errorf("prepare %s: %w", id, cause)
}

// undo undoes what the driver did for the claim, removes its spec and
// forgets it. When the driver fails the claim stays, marked incomplete, so
// that unprepare or the next start retries.
func (p *Plugin[D, P]) undo(ctx context.Context, uid string, entry Claim[D]) error {
	if err := p.undoDriver(ctx, uid, entry); err != nil {
		return err
	}
	if err := p.specs.remove(uid); err != nil {
		return err
	}
	return p.forget(uid)
}

// undoDriver is Driver.Unprepare; when it fails the claim is checkpointed
// as incomplete.
func (p *Plugin[D, P]) undoDriver(ctx context.Context, uid string, entry Claim[D]) error {
	err := p.drv.Unprepare(ctx, uid, entry)
	if err == nil {
		return nil
	}
	entry.Incomplete = true
	if saveErr := p.save(uid, entry); saveErr != nil {
		return errors.Join(err, saveErr)
	}
	return err
}

// writeSpec writes the claim's spec from the driver's edits.
func (p *Plugin[D, P]) writeSpec(ctx context.Context, uid string, entry Claim[D]) error {
	edits, err := p.drv.Edits(ctx, uid, entry)
	if err != nil {
		return err
	}
	if len(edits.Devices) == 0 {
		return nil
	}
	return p.specs.write(uid, edits)
}

// save checkpoints entry as the claim's state.
func (p *Plugin[D, P]) save(uid string, entry Claim[D]) error {
	next := maps.Clone(p.prepared)
	next[uid] = entry
	if err := p.checkpoint.Save(next); err != nil {
		return err
	}
	p.prepared = next
	return nil
}

// forget removes the claim from the checkpoint.
func (p *Plugin[D, P]) forget(uid string) error {
	if _, ok := p.prepared[uid]; !ok {
		return nil
	}
	next := maps.Clone(p.prepared)
	delete(next, uid)
	if err := p.checkpoint.Save(next); err != nil {
		return err
	}
	p.prepared = next
	return nil
}

// sameAllocation compares two claims' allocation results, not what the
// driver recorded about them.
func sameAllocation[D any, P Record[D]](a, b Claim[D]) bool {
	return slices.EqualFunc(a.Devices, b.Devices, func(x, y D) bool {
		px, py := P(&x).prepared(), P(&y).prepared()
		return px.Request == py.Request && px.Pool == py.Pool && px.Device == py.Device &&
			px.AdminAccess == py.AdminAccess && px.ShareID == py.ShareID && slices.Equal(px.CDIDeviceIDs, py.CDIDeviceIDs)
	})
}

// conflict reports a claim other than uid that holds device exclusively;
// admin access on either side shares the device, and so do shares (results
// with a share ID).
func (p *Plugin[D, P]) conflict(uid, device string, admin bool) (string, bool) {
	if admin {
		return "", false
	}
	for _, other := range slices.Sorted(maps.Keys(p.prepared)) {
		if other == uid {
			continue
		}
		for i := range p.prepared[other].Devices {
			d := P(&p.prepared[other].Devices[i]).prepared()
			if d.Device == device && d.Pool == p.cfg.NodeName && !d.AdminAccess && d.ShareID == "" {
				return other, true
			}
		}
	}
	return "", false
}

// kubeletDevices is what prepare returns for a claim; with
// Config.DeviceMetadata each device carries the attributes it has in the
// published pool (a device of another pool has none the plugin knows).
func (p *Plugin[D, P]) kubeletDevices(c Claim[D]) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(c.Devices))
	for i := range c.Devices {
		d := P(&c.Devices[i]).prepared()
		kd := kubeletplugin.Device{
			Requests:     []string{d.Request},
			PoolName:     d.Pool,
			DeviceName:   d.Device,
			CDIDeviceIDs: slices.Clone(d.CDIDeviceIDs),
		}
		if p.cfg.DeviceMetadata {
			kd.Metadata = &kubeletplugin.DeviceMetadata{Attributes: publishedAttributes(p.resources, d.Pool, d.Device)}
		}
		if d.ShareID != "" {
			kd.ShareID = ptr.To(types.UID(d.ShareID))
		}
		out = append(out, kd)
	}
	return out
}

// publishedAttributes are the attributes of device in pool as resources
// publish it, keyed as the ResourceSlice keys them; nil when resources
// have no such device.
func publishedAttributes(resources resourceslice.DriverResources, pool, device string) map[string]resourceapi.DeviceAttribute {
	for _, s := range resources.Pools[pool].Slices {
		for _, d := range s.Devices {
			if d.Name != device || len(d.Attributes) == 0 {
				continue
			}
			out := make(map[string]resourceapi.DeviceAttribute, len(d.Attributes))
			for k, v := range d.Attributes {
				out[string(k)] = v
			}
			return out
		}
	}
	return nil
}

// UnprepareResourceClaims undoes each claim, removes its spec and forgets
// it; claims that are not prepared succeed.
func (p *Plugin[D, P]) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
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

func (p *Plugin[D, P]) unprepare(ctx context.Context, claim kubeletplugin.NamespacedObject) error {
	uid := string(claim.UID)
	fail := func(err error) error {
		return fmt.Errorf("unprepare claim %s (%s): %w", claim.NamespacedName, uid, err)
	}
	if err := checkClaimUID(uid); err != nil {
		return fail(err)
	}
	if entry, ok := p.prepared[uid]; ok {
		if err := p.undoDriver(ctx, uid, entry); err != nil {
			return fail(err)
		}
	}
	// By its deterministic name, also when the checkpoint does not know
	// the claim: a spec written before a crash goes too.
	if keep := p.cfg.KeepSpecOnUnprepare; keep == nil || !keep(ctx, claim, p.specs.path(uid)) {
		if err := p.specs.remove(uid); err != nil {
			return fail(err)
		}
	}
	if err := p.forget(uid); err != nil {
		return fail(err)
	}
	return nil
}

// HandleError logs recoverable errors (among them a pool the ResourceSlice
// controller refuses and slices the API server rejects) and stops the
// driver on all others.
func (p *Plugin[D, P]) HandleError(ctx context.Context, err error, msg string) {
	if errors.Is(err, kubeletplugin.ErrRecoverable) {
		klog.FromContext(ctx).Error(err, msg)
		return
	}
	p.cfg.Fatal(fmt.Errorf("%s: %w", msg, err))
}

// WatchHealthStatus is not supported; Run also turns the health service off.
func (p *Plugin[D, P]) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
