package nicdriver

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
)

// The share checkpoint: <KubeletPluginDir>/shares.json, beside the
// harness's checkpoint.json.
const (
	SharesFile    = "shares.json"
	sharesVersion = "nic.drakit.dev/shares/v1"
)

// shareClass is the CDI class of the per-claim share specs.
const shareClass = "share"

// shareRecord is one PF share of a prepared claim, as the share checkpoint
// records it.
type shareRecord struct {
	pluginharness.PreparedDevice
	// ShareID is the allocation's share.
	ShareID string `json:"shareID"`
	// Bandwidth is the bandwidth it consumes (a quantity, bits per
	// second); empty for admin access, which consumes none.
	Bandwidth string `json:"bandwidth,omitempty"`
}

type shareClaim = pluginharness.Claim[shareRecord]

// shares prepares the PFs' bandwidth shares of claims: nothing changes on
// the NIC, a share is its CDI spec and its checkpoint record. One spec per
// claim with shares, <CDIDir>/k8s.<driver>-share_<claimUID>.json, kind
// k8s.<driver>/share, one CDI device <claimUID>-<device>-<shareID> per
// share. Callers serialize the calls.
type shares struct {
	dir, vendor string
	cache       *cdiapi.Cache
	checkpoint  *pluginharness.Checkpoint[shareRecord]
	claims      map[string]shareClaim
}

func newShares(driverName, cdiDir, pluginDir string) (*shares, error) {
	vendor := "k8s." + driverName
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, fmt.Errorf("derive CDI vendor from driver name %s: %w", driverName, err)
	}
	if err := os.MkdirAll(cdiDir, 0o755); err != nil {
		return nil, fmt.Errorf("create CDI directory %s: %w", cdiDir, err)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(cdiDir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("create CDI cache for %s: %w", cdiDir, err)
	}
	cp := &pluginharness.Checkpoint[shareRecord]{Path: filepath.Join(pluginDir, SharesFile), Version: sharesVersion, Checksum: true}
	claims, err := cp.Load()
	if err != nil {
		return nil, err
	}
	return &shares{dir: cdiDir, vendor: vendor, cache: cache, checkpoint: cp, claims: claims}, nil
}

// specName is the file name of a claim's share spec.
func (s *shares) specName(uid string) string {
	return cdiapi.GenerateTransientSpecName(s.vendor, shareClass, uid) + ".json"
}

// specPath is the host path of a claim's share spec.
func (s *shares) specPath(uid string) string { return filepath.Join(s.dir, s.specName(uid)) }

func (s *shares) deviceName(uid, device, shareID string) string {
	return uid + "-" + device + "-" + shareID
}

// prepare records and writes the claim's shares (results of PF devices,
// each with its shareID): the same shares again rewrite the same spec. A
// share needs a shareID and, unless it has admin access, the bandwidth it
// consumes; the bandwidth the claims prepared on this node take from a PF
// never exceeds its link (the scheduler's accounting, checked again as the
// last line of defense).
func (s *shares) prepare(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult, devices map[string]*device) ([]kubeletplugin.Device, error) {
	uid := string(claim.UID)
	recs := make([]shareRecord, 0, len(results))
	for _, r := range results {
		if r.ShareID == nil || *r.ShareID == "" {
			return nil, fmt.Errorf("device %s: a PF's bandwidth share needs a shareID, the allocation has none", r.Device)
		}
		rec := shareRecord{
			PreparedDevice: pluginharness.PreparedDevice{
				Request: r.Request, Pool: r.Pool, Device: r.Device,
				AdminAccess:  r.AdminAccess != nil && *r.AdminAccess,
				CDIDeviceIDs: []string{parser.QualifiedName(s.vendor, shareClass, s.deviceName(uid, r.Device, string(*r.ShareID)))},
			},
			ShareID: string(*r.ShareID),
		}
		if q, ok := r.ConsumedCapacity[CapacityBandwidth]; ok {
			rec.Bandwidth = q.String()
		} else if !rec.AdminAccess {
			return nil, fmt.Errorf("device %s, share %s: the allocation's consumedCapacity has no %s", r.Device, rec.ShareID, CapacityBandwidth)
		}
		recs = append(recs, rec)
	}
	if old, ok := s.claims[uid]; ok && slices.EqualFunc(old.Devices, recs, sameShare) {
		if err := s.write(uid, recs, devices); err != nil {
			return nil, err
		}
		return shareDevices(recs), nil
	}
	if err := s.checkBandwidth(uid, recs, devices); err != nil {
		return nil, err
	}
	// The spec before the checkpoint: unprepare removes it by name even
	// when the checkpoint never learned about it.
	if err := s.write(uid, recs, devices); err != nil {
		return nil, err
	}
	if err := s.save(uid, shareClaim{Namespace: claim.Namespace, Name: claim.Name, Devices: recs}); err != nil {
		return nil, err
	}
	return shareDevices(recs), nil
}

func sameShare(a, b shareRecord) bool {
	return a.Request == b.Request && a.Pool == b.Pool && a.Device == b.Device && a.AdminAccess == b.AdminAccess &&
		a.ShareID == b.ShareID && a.Bandwidth == b.Bandwidth && slices.Equal(a.CDIDeviceIDs, b.CDIDeviceIDs)
}

// checkBandwidth refuses shares that would take more bandwidth from a PF
// than its link has, counting the shares other claims prepared.
func (s *shares) checkBandwidth(uid string, recs []shareRecord, devices map[string]*device) error {
	used := map[string]*resource.Quantity{} // by device
	add := func(rec shareRecord) error {
		if rec.AdminAccess || rec.Bandwidth == "" {
			return nil
		}
		q, err := resource.ParseQuantity(rec.Bandwidth)
		if err != nil {
			return fmt.Errorf("device %s, share %s: bandwidth %q: %w", rec.Device, rec.ShareID, rec.Bandwidth, err)
		}
		if used[rec.Device] == nil {
			used[rec.Device] = resource.NewQuantity(0, resource.DecimalSI)
		}
		used[rec.Device].Add(q)
		return nil
	}
	for _, other := range slices.Sorted(maps.Keys(s.claims)) {
		if other == uid {
			continue
		}
		for _, rec := range s.claims[other].Devices {
			if err := add(rec); err != nil {
				return err
			}
		}
	}
	others := map[string]string{}
	for dev, q := range used {
		others[dev] = q.String()
	}
	for _, rec := range recs {
		if err := add(rec); err != nil {
			return err
		}
	}
	for _, dev := range slices.Sorted(maps.Keys(used)) {
		d, ok := devices[dev]
		if !ok || d.PF.Netdev == nil {
			return fmt.Errorf("device %s is not a PF's bandwidth share of this node", dev)
		}
		link := resource.NewQuantity(d.PF.Netdev.SpeedMbps*1_000_000, resource.DecimalSI)
		if used[dev].Cmp(*link) > 0 {
			return fmt.Errorf("device %s: the shares of this claim take more bandwidth than the link's %s has left (claims prepared before take %s)",
				dev, link, orZero(others[dev]))
		}
	}
	return nil
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// write writes the claim's share spec from recs (none: no spec).
func (s *shares) write(uid string, recs []shareRecord, devices map[string]*device) error {
	if len(recs) == 0 {
		return s.remove(uid)
	}
	spec := &cdispec.Spec{Kind: s.vendor + "/" + shareClass}
	for _, rec := range recs {
		d, ok := devices[rec.Device]
		if !ok || d.Kind != kindPF {
			return fmt.Errorf("device %s is not a PF's bandwidth share of this node", rec.Device)
		}
		spec.Devices = append(spec.Devices, cdispec.Device{
			Name:           s.deviceName(uid, rec.Device, rec.ShareID),
			ContainerEdits: shareEdits(rec.Device, d.PF, rec),
		})
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return fmt.Errorf("determine CDI version of the share spec of claim %s: %w", uid, err)
	}
	spec.Version = v
	if err := s.cache.WriteSpec(spec, s.specName(uid)); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", s.specPath(uid), err)
	}
	return nil
}

// remove deletes the claim's share spec; a missing spec is not an error.
func (s *shares) remove(uid string) error {
	if err := s.cache.RemoveSpec(s.specName(uid)); err != nil {
		return fmt.Errorf("remove CDI spec %s: %w", s.specPath(uid), err)
	}
	return nil
}

// save checkpoints the claim's shares; none forgets the claim.
func (s *shares) save(uid string, c shareClaim) error {
	next := maps.Clone(s.claims)
	if len(c.Devices) == 0 {
		if _, ok := next[uid]; !ok {
			return nil
		}
		delete(next, uid)
	} else {
		next[uid] = c
	}
	if err := s.checkpoint.Save(next); err != nil {
		return err
	}
	s.claims = next
	return nil
}

// unprepare removes the claim's share spec, by name also when the
// checkpoint does not know the claim, and forgets its shares.
func (s *shares) unprepare(uid string) error {
	if err := s.remove(uid); err != nil {
		return err
	}
	return s.save(uid, shareClaim{})
}

func shareDevices(recs []shareRecord) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(recs))
	for _, rec := range recs {
		out = append(out, kubeletplugin.Device{
			Requests:     []string{rec.Request},
			PoolName:     rec.Pool,
			DeviceName:   rec.Device,
			CDIDeviceIDs: slices.Clone(rec.CDIDeviceIDs),
			ShareID:      ptrUID(rec.ShareID),
		})
	}
	return out
}

func ptrUID(s string) *types.UID {
	u := types.UID(s)
	return &u
}
