package nicdriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// checkpointVersion is the only format of the harness checkpoint (the
// prepared VFs) this driver reads.
const checkpointVersion = "nic.drakit.dev/checkpoint/v1"

// vfClaim is what the checkpoint holds for a claim with VFs.
type vfClaim = pluginharness.Claim[vfDevice]

// vfDevice is one allocation result of a prepared claim that the harness
// handles (a VF), as the checkpoint records it.
type vfDevice struct {
	pluginharness.PreparedDevice
	// VF is what prepare did for the VF and found out about it.
	VF *vfRecord `json:"vf,omitempty"`
}

// vfRecord is a VF a claim uses. It is checkpointed, with the claim
// marked incomplete, before the driver writes sriov_numvfs, and again once
// the VF exists, so that a restart at any point can undo the write.
type vfRecord struct {
	// PF is the PF's PCI address, Index the VF's.
	PF    string `json:"pf"`
	Index int    `json:"index"`
	// Count is the VF count the driver writes when the PF has none.
	Count int `json:"count"`
	// Owned says the PF's VFs are the driver's: this claim's prepare
	// created them, or found them created by the driver for another
	// claim. The driver resets sriov_numvfs to 0 only for owned VFs,
	// when the last claim using a VF of the PF is unprepared.
	Owned bool `json:"owned,omitempty"`

	// Set once the VF exists.

	// BDF is the VF's PCI address.
	BDF string `json:"bdf,omitempty"`
	// Interface and MAC are its netdev's name and address; empty when it
	// has none (not bound to a network driver).
	Interface string `json:"interface,omitempty"`
	MAC       string `json:"mac,omitempty"`
	// RDMADevice, Uverbs (uverbs<N>), UverbsMajor and UverbsMinor are its
	// RDMA device; empty when it has none.
	RDMADevice  string `json:"rdmaDevice,omitempty"`
	Uverbs      string `json:"uverbs,omitempty"`
	UverbsMajor int64  `json:"uverbsMajor,omitempty"`
	UverbsMinor int64  `json:"uverbsMinor,omitempty"`
}

// ready reports whether the record describes a VF that exists.
func (r *vfRecord) ready() bool { return r.BDF != "" }

// hardware is the driver's side of the harness (pluginharness.Driver):
// the NICs it discovers and publishes, the VFs prepare creates and
// unprepare removes, and the CDI edits of a claim's VFs. The PFs' bandwidth
// shares never reach it: the plugin prepares them (shares.go).
type hardware struct {
	poolName  string
	sysfs     sysfs
	hostRoot  string
	vfsPerPF  int
	vfTimeout time.Duration

	// claims are the checkpointed claims with VFs, by UID: seeded from
	// the checkpoint before the harness starts (it undoes unfinished
	// prepares before Discover), kept by Prepare and Unprepare. Which
	// claims use a PF's VFs decides when its VFs go.
	claims map[string]vfClaim

	// Set by Discover.
	pfs     []PF
	devices map[string]*device // by device name
	list    []device
}

var _ pluginharness.Driver[vfDevice] = (*hardware)(nil)

// Discover reads the PFs from sysfs and builds the pool: PF share devices
// and VFs.
func (h *hardware) Discover(ctx context.Context, _ map[string]vfClaim) (resourceslice.DriverResources, error) {
	pfs, err := ScanPFs(ctx, h.sysfs.root)
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("discover NICs: %w", err)
	}
	h.pfs = pfs
	h.list = inventory(ctx, h.pfs, h.vfsPerPF)
	h.devices = make(map[string]*device, len(h.list))
	for i := range h.list {
		h.devices[h.list[i].Name] = &h.list[i]
	}
	res, err := buildResources(h.poolName, h.list)
	if err != nil {
		return resourceslice.DriverResources{}, fmt.Errorf("build ResourceSlices: %w", err)
	}
	return res, nil
}

// Admit refuses what the harness must never see: a PF's bandwidth share
// (the plugin prepares shares itself) and admin access to a VF (it exists
// only while a claim uses it).
func (h *hardware) Admit(name string, adminAccess bool) error {
	d, ok := h.devices[name]
	switch {
	case !ok:
		return fmt.Errorf("device %s is not on this node", name)
	case d.Kind == kindPF:
		return fmt.Errorf("device %s is a PF's bandwidth share, which is not prepared as a VF", name)
	case adminAccess:
		return fmt.Errorf("device %s: admin access to a VF is not supported (VFs exist only while a claim uses them)", name)
	}
	return nil
}

// Prepare makes the claim's VFs exist: a PF without VFs gets the published
// number, written to sriov_numvfs after the claim is checkpointed as
// incomplete with records that say so; then each VF is waited for and
// recorded (PCI address, netdev, RDMA device).
func (h *hardware) Prepare(ctx context.Context, uid string, claim *vfClaim, save func() error) error {
	var create []string // PFs whose VFs this prepare creates
	for i := range claim.Devices {
		d := h.devices[claim.Devices[i].Device]
		rec := &vfRecord{PF: d.PF.BDF, Index: d.VF, Count: d.Count}
		numVFs, err := h.sysfs.readNumVFs(d.PF.BDF)
		if err != nil {
			return err
		}
		switch {
		case numVFs == 0:
			rec.Owned = true
			if !slices.Contains(create, d.PF.BDF) {
				create = append(create, d.PF.BDF)
			}
		case d.VF >= numVFs:
			return fmt.Errorf("device %s: PF %s has %d VFs that this driver did not create, and it does not change a non-zero VF count",
				d.Name, d.PF.BDF, numVFs)
		default:
			rec.Owned = h.owned(uid, d.PF.BDF)
		}
		claim.Devices[i].VF = rec
	}
	h.claims[uid] = *claim
	if len(create) > 0 {
		// Checkpointed before anything changes: a restart from here on
		// finds the records and removes the VFs again.
		claim.Incomplete = true
		h.claims[uid] = *claim
		if err := save(); err != nil {
			return err
		}
		for _, pf := range create {
			if err := h.sysfs.setNumVFs(ctx, pf, h.countOf(claim, pf), h.vfTimeout); err != nil {
				return fmt.Errorf("create the VFs of PF %s: %w", pf, err)
			}
			klog.FromContext(ctx).V(2).Info("Created VFs", "pf", pf, "count", h.countOf(claim, pf), "claim", uid)
		}
	}
	for i := range claim.Devices {
		if err := h.waitVF(ctx, claim.Devices[i].VF); err != nil {
			return err
		}
	}
	claim.Incomplete = false
	h.claims[uid] = *claim
	return nil
}

// countOf is the VF count the claim's records give a PF.
func (h *hardware) countOf(claim *vfClaim, pf string) int {
	for _, d := range claim.Devices {
		if d.VF != nil && d.VF.PF == pf {
			return d.VF.Count
		}
	}
	return 0
}

// owned reports whether a claim other than uid uses owned VFs of pf.
func (h *hardware) owned(uid, pf string) bool {
	for other, c := range h.claims {
		if other == uid {
			continue
		}
		for _, d := range c.Devices {
			if d.VF != nil && d.VF.PF == pf && d.VF.Owned {
				return true
			}
		}
	}
	return false
}

// usedByOthers reports whether a claim other than uid uses a VF of pf.
func (h *hardware) usedByOthers(uid, pf string) bool {
	for other, c := range h.claims {
		if other == uid {
			continue
		}
		for _, d := range c.Devices {
			if d.VF != nil && d.VF.PF == pf {
				return true
			}
		}
	}
	return false
}

// waitVF waits until the VF exists with what the PF promises it (a netdev
// and RDMA device when the PF's driver probes new VFs) and records it.
func (h *hardware) waitVF(ctx context.Context, rec *vfRecord) error {
	pf := h.pfByBDF(rec.PF)
	wantNetdev, wantRDMA := pf != nil && expectVFNetdev(pf), pf != nil && expectVFRDMA(pf)
	var (
		vf      VF
		missing string
	)
	err := waitFor(ctx, h.vfTimeout,
		func() (bool, error) {
			links, err := h.sysfs.virtfnLinks(rec.PF)
			if err != nil {
				return false, err
			}
			bdf, ok := links[rec.Index]
			if !ok {
				missing = fmt.Sprintf("no virtfn%d link", rec.Index)
				return false, nil
			}
			// A VF that is being set up may show a directory before
			// its files: read again until the timeout.
			if vf, err = h.sysfs.readVF(rec.PF, rec.Index, bdf); err != nil {
				missing = err.Error()
				return false, nil
			}
			switch {
			case wantNetdev && vf.Netdev == nil:
				missing = fmt.Sprintf("VF %s has no network interface yet (net/)", bdf)
			case wantRDMA && (vf.RDMA == nil || vf.RDMA.Uverbs == ""):
				missing = fmt.Sprintf("VF %s has no RDMA user verbs device yet (infiniband_verbs/)", bdf)
			default:
				return true, nil
			}
			return false, nil
		},
		func() error {
			return fmt.Errorf("VF %d of PF %s: %s after %s", rec.Index, rec.PF, missing, h.vfTimeout)
		})
	if err != nil {
		return err
	}
	rec.BDF = vf.BDF
	if vf.Netdev != nil {
		rec.Interface, rec.MAC = vf.Netdev.Name, vf.Netdev.Address
	}
	if r := vf.RDMA; r != nil && r.Uverbs != "" {
		rec.RDMADevice, rec.Uverbs, rec.UverbsMajor, rec.UverbsMinor = r.Device, r.Uverbs, r.Major, r.Minor
	}
	return nil
}

func (h *hardware) pfByBDF(bdf string) *PF {
	for i := range h.pfs {
		if h.pfs[i].BDF == bdf {
			return &h.pfs[i]
		}
	}
	return nil
}

// Unprepare removes the VFs of every PF of the claim that the driver
// created and no other claim uses (sriov_numvfs back to 0, waiting for
// them to go), and forgets the claim; every failure is returned.
func (h *hardware) Unprepare(ctx context.Context, uid string, claim vfClaim) error {
	owned := map[string]bool{}
	for _, d := range claim.Devices {
		if d.VF != nil {
			owned[d.VF.PF] = owned[d.VF.PF] || d.VF.Owned
		}
	}
	var errs []error
	for _, pf := range slices.Sorted(maps.Keys(owned)) {
		if !owned[pf] || h.usedByOthers(uid, pf) {
			continue
		}
		if err := h.sysfs.removeVFs(ctx, pf, h.vfTimeout); err != nil {
			errs = append(errs, fmt.Errorf("remove the VFs of PF %s: %w", pf, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removed VFs", "pf", pf, "claim", uid)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	delete(h.claims, uid)
	return nil
}
