package driver

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// deviceKind tells what a published device is.
type deviceKind int

const (
	// kindGPU is a full GPU.
	kindGPU deviceKind = iota
	// kindMIGPartition is one placement of one GI profile of a GPU in
	// dynamic MIG mode; prepare creates it.
	kindMIGPartition
	// kindMIGStatic is a MIG device that existed at discovery.
	kindMIGStatic
)

// device is one device the driver publishes and can prepare.
type device struct {
	Name string
	Kind deviceKind
	// GPU is the full GPU, or the MIG device's parent.
	GPU *GPU
	// Profile and Placement: kindMIGPartition only.
	Profile   *MIGProfile
	Placement nvml.GpuInstancePlacement
	// Instance: kindMIGStatic only.
	Instance *MIGInstance
	// Partitioned is set on the full GPU of a GPU in dynamic MIG mode
	// and on its partitions: they consume the GPU's counter set.
	Partitioned bool
}

// migMode is how the driver treats a GPU.
type migMode int

const (
	migNone    migMode = iota // MIG disabled or not supported: a full GPU
	migDynamic                // MIG enabled, no foreign instances: full GPU and partitions
	migStatic                 // MIG enabled with instances: the existing MIG devices
)

// ownedPlacement identifies a GPU instance the driver created (by its parent
// minor, profile ID and placement start), known from the checkpoint.
type ownedPlacement struct{ minor, profileID, start int }

// mode decides how to publish g: a GPU in MIG mode is static when it has a
// MIG device the driver did not create, dynamic otherwise.
func (g *GPU) mode(owned map[ownedPlacement]bool) migMode {
	if g.MIG == nil {
		return migNone
	}
	for _, inst := range g.MIG.Instances {
		if !owned[ownedPlacement{g.Minor, inst.ProfileID, inst.Start}] {
			return migStatic
		}
	}
	return migDynamic
}

// migProfileLabel turns a profile name into a DNS-label fragment: lower
// case, dots dropped, any other character but a-z0-9 becomes '-'
// ("1g.10gb+me" → "1g10gb-me").
func migProfileLabel(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c == '.':
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// partitionName is gpu-<minor>-mig-<profile>-<start>.
func partitionName(g *GPU, p *MIGProfile, start uint32) string {
	return fmt.Sprintf("gpu-%d-mig-%s-%d", g.Minor, migProfileLabel(p.Name), start)
}

// staticMIGName is gpu-<minor>-mig-gi<GI>-ci<CI>.
func staticMIGName(g *GPU, inst *MIGInstance) string {
	return fmt.Sprintf("gpu-%d-mig-gi%d-ci%d", g.Minor, inst.GI, inst.CI)
}

// devices lists the published devices in slice order: per GPU in inventory
// order the full GPU, then its partitions (profile index order, then
// placement start), or its static MIG devices. Names are unique.
func (inv *Inventory) devices(owned map[ownedPlacement]bool) ([]device, error) {
	var out []device
	seen := map[string]bool{}
	add := func(d device) error {
		if seen[d.Name] {
			return fmt.Errorf("index devices: two devices are named %s", d.Name)
		}
		seen[d.Name] = true
		out = append(out, d)
		return nil
	}
	for i := range inv.GPUs {
		g := &inv.GPUs[i]
		switch g.mode(owned) {
		case migNone:
			if err := add(device{Name: g.DeviceName(), Kind: kindGPU, GPU: g}); err != nil {
				return nil, err
			}
		case migStatic:
			for j := range g.MIG.Instances {
				inst := &g.MIG.Instances[j]
				if err := add(device{Name: staticMIGName(g, inst), Kind: kindMIGStatic, GPU: g, Instance: inst}); err != nil {
					return nil, err
				}
			}
		case migDynamic:
			if err := add(device{Name: g.DeviceName(), Kind: kindGPU, GPU: g, Partitioned: true}); err != nil {
				return nil, err
			}
			for j := range g.MIG.Profiles {
				p := &g.MIG.Profiles[j]
				for _, pl := range p.Placements {
					d := device{Name: partitionName(g, p, pl.Start), Kind: kindMIGPartition, GPU: g, Profile: p, Placement: pl, Partitioned: true}
					if err := add(d); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return out, nil
}
